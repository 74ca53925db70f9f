import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { healthzRoute } from '../lib/http/routes';

export const handler = lambdaHandler(healthzRoute, lambdaDeps);
