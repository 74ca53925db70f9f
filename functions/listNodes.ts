import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { listNodesRoute } from '../lib/http/routes';

export const handler = lambdaHandler(listNodesRoute, lambdaDeps);
