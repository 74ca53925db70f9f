import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { nodeDevicesRoute } from '../lib/http/routes';

export const handler = lambdaHandler(nodeDevicesRoute, lambdaDeps);
