import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { bindOutcomeRoute } from '../lib/http/routes';

export const handler = lambdaHandler(bindOutcomeRoute, lambdaDeps);
