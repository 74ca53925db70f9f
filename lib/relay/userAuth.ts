/**
 * Who may read a pod's scheduler log: the caller's bearer token is checked with a TokenReview, then a
 * SubjectAccessReview must allow `get pods` in the namespace (docs/api.md §7). The token is never
 * logged and never leaves this module except to the API server.
 */
import type { AuthenticationV1Api, AuthorizationV1Api } from '@kubernetes/client-node';
import type { AppLogger } from '../powertools';
import { statusMessage } from './kubeWriter';

export interface ReviewApis {
  readonly authn: Pick<AuthenticationV1Api, 'createTokenReview'>;
  readonly authz: Pick<AuthorizationV1Api, 'createSubjectAccessReview'>;
}

export type AuthDecision =
  | { readonly allowed: true; readonly username: string }
  | { readonly allowed: false; readonly code: 401 | 403 | 500; readonly reason: 'Unauthorized' | 'Forbidden' | 'InternalError'; readonly message: string };

export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

export async function authorizePodRead(
  authorization: string | undefined,
  target: { readonly namespace: string; readonly name: string },
  apis: ReviewApis,
  logger: AppLogger,
): Promise<AuthDecision> {
  const token = bearerToken(authorization);
  if (token === undefined) return { allowed: false, code: 401, reason: 'Unauthorized', message: 'a bearer token is required' };

  let user: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } | undefined;
  try {
    const review = await apis.authn.createTokenReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    });
    if (review.status?.authenticated !== true) {
      logger.info('TokenRejected', { reason: review.status?.error ?? 'not authenticated' });
      return { allowed: false, code: 401, reason: 'Unauthorized', message: 'the bearer token was not accepted' };
    }
    user = review.status.user;
  } catch (err) {
    logger.error('TokenReviewFailed', { error: statusMessage(err) });
    return { allowed: false, code: 500, reason: 'InternalError', message: 'could not review the bearer token' };
  }

  const username = user?.username ?? '';
  try {
    // Groups, uid and extra come from the TokenReview: without them RBAC bindings to groups would not apply.
    const sar = await apis.authz.createSubjectAccessReview({
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: username,
          ...(user?.uid !== undefined ? { uid: user.uid } : {}),
          ...(user?.groups !== undefined ? { groups: user.groups } : {}),
          ...(user?.extra !== undefined ? { extra: user.extra } : {}),
          resourceAttributes: { namespace: target.namespace, verb: 'get', group: '', resource: 'pods', name: target.name },
        },
      },
    });
    if (sar.status?.allowed !== true) {
      logger.info('SchedulerLogForbidden', { user: username, namespace: target.namespace, pod: target.name });
      return {
        allowed: false,
        code: 403,
        reason: 'Forbidden',
        message: `pods "${target.name}" is forbidden: User "${username}" cannot get resource "pods" in API group "" in the namespace "${target.namespace}"`,
      };
    }
  } catch (err) {
    logger.error('SubjectAccessReviewFailed', { error: statusMessage(err) });
    return { allowed: false, code: 500, reason: 'InternalError', message: 'could not check access' };
  }
  return { allowed: true, username };
}

/** A Kubernetes `Status` failure body, as kubectl and client libraries expect. */
export function statusBody(code: number, reason: string, message: string): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}
