import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { schedulerLogRoute } from '../lib/http/routes';

export const handler = lambdaHandler(schedulerLogRoute, lambdaDeps);
