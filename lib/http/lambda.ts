/**
 * Lambda adapter: API Gateway HTTP API (payload v2) events in, one route, responses out, with the
 * Powertools middlewares. The local server invokes these same handlers, so both serve identically.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { ControlDeps } from '../control/deps';
import { logger, metrics, metricsEnabled, requestLogger, tracer } from '../powertools';
import { errorResponse, isExposed } from './respond';
import { matchPath, type Route } from './routes';

export type LambdaHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

export function lambdaHandler(route: Route, deps: () => ControlDeps): LambdaHandler {
  const metricsOn = metricsEnabled;
  const run = async (event: APIGatewayProxyEventV2, context: Context): Promise<APIGatewayProxyStructuredResultV2> => {
    const started = Date.now();
    const reference = context.awsRequestId;
    // The request's keys (route, pod, node, attempt id) go on each of its lines: they cannot leak into another
    // request's lines, even where one process serves requests concurrently (the local server).
    const log = requestLogger(logger, context, { route: route.name });
    // One count per request and route; it also keeps every invocation's EMF flush non-empty.
    if (metricsOn) metrics.addMetric(`${route.name}Requests`, MetricUnit.Count, 1);
    try {
      const body = event.body === undefined ? '' : event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
      // Path parameters are decoded from the raw path by the same function as in the local server.
      const pathParameters = matchPath(route.path, event.rawPath) ?? {};
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(event.headers ?? {})) if (value !== undefined) headers[key.toLowerCase()] = value;
      const response = await route.handle(
        { ...deps(), logger: log },
        { body, pathParameters, query: event.queryStringParameters ?? {}, headers },
        (keys) => log.appendKeys(keys),
      );
      log.info('Request handled', { status: response.statusCode, latencyMs: Date.now() - started });
      return { ...response, headers: { ...response.headers } };
    } catch (err) {
      if (isExposed(err)) log.warn('Request rejected', { status: err.status, error: err.message, latencyMs: Date.now() - started });
      else {
        log.error('Request failed', { error: err as Error, reference, latencyMs: Date.now() - started });
        if (metricsOn) metrics.addMetric(`${route.name}Failures`, MetricUnit.Count, 1);
      }
      const response = errorResponse(err, route.kind, reference);
      return { ...response, headers: { ...response.headers } };
    }
  };
  const traced = tracer ? middy(run).use(captureLambdaHandler(tracer)) : middy(run);
  const handler = traced.use(injectLambdaContext(logger, { clearState: true }));
  // Metrics off (the local server's default): no flush at all, so no "nothing to publish" warning on every request.
  return (metricsOn ? handler.use(logMetrics(metrics)) : handler) as unknown as LambdaHandler;
}
