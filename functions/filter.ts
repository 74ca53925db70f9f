import { lambdaDeps } from '../lib/app';
import { lambdaHandler } from '../lib/http/lambda';
import { filterRoute } from '../lib/http/routes';

export const handler = lambdaHandler(filterRoute, lambdaDeps);
