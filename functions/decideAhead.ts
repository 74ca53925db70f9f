import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { decideAheadRoute } from '../lib/http/routes';

export const handler = lambdaHandler(decideAheadRoute, lambdaDeps);
