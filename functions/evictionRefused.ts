import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { evictionRefusedRoute } from '../lib/http/routes';

export const handler = lambdaHandler(evictionRefusedRoute, lambdaDeps);
