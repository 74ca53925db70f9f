import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { clusterEventsRoute } from '../lib/http/routes';

export const handler = lambdaHandler(clusterEventsRoute, lambdaDeps);
