import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { namespaceSchedulerLogsRoute } from '../lib/http/routes';

export const handler = lambdaHandler(namespaceSchedulerLogsRoute, lambdaDeps);
