import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { allSchedulerLogsRoute } from '../lib/http/routes';

export const handler = lambdaHandler(allSchedulerLogsRoute, lambdaDeps);
