import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { bindRoute } from '../lib/http/routes';

export const handler = lambdaHandler(bindRoute, lambdaDeps);
