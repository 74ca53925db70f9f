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

/** Who the caller is, from the TokenReview of their bearer token. */
export interface ReviewedUser {
  readonly username: string;
  readonly uid?: string;
  readonly groups?: string[];
  readonly extra?: Record<string, string[]>;
}

export type Denial = Extract<AuthDecision, { allowed: false }>;

/** What a SubjectAccessReview asks: a verb on a resource, in a namespace (absent: the cluster scope, every namespace). */
export interface AccessQuestion {
  readonly verb: 'get' | 'list';
  readonly resource: 'pods' | 'nodes';
  readonly namespace?: string;
  readonly name?: string;
}

/** The caller's identity from their token, or why not (401, or 500 when the review itself failed). */
export async function authenticate(authorization: string | undefined, apis: ReviewApis, logger: AppLogger): Promise<{ readonly ok: true; readonly user: ReviewedUser } | ({ readonly ok: false } & Denial)> {
  const token = bearerToken(authorization);
  if (token === undefined) return { ok: false, allowed: false, code: 401, reason: 'Unauthorized', message: 'a bearer token is required' };
  try {
    const review = await apis.authn.createTokenReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    });
    if (review.status?.authenticated !== true) {
      logger.info('TokenRejected', { reason: review.status?.error ?? 'not authenticated' });
      return { ok: false, allowed: false, code: 401, reason: 'Unauthorized', message: 'the bearer token was not accepted' };
    }
    const user = review.status.user;
    return {
      ok: true,
      user: {
        username: user?.username ?? '',
        ...(user?.uid !== undefined ? { uid: user.uid } : {}),
        ...(user?.groups !== undefined ? { groups: user.groups } : {}),
        ...(user?.extra !== undefined ? { extra: user.extra } : {}),
      },
    };
  } catch (err) {
    logger.error('TokenReviewFailed', { error: statusMessage(err) });
    return { ok: false, allowed: false, code: 500, reason: 'InternalError', message: 'could not review the bearer token' };
  }
}

/** Whether the user may, by a SubjectAccessReview; a review that fails is a 500 denial, never an allowance. */
export async function reviewAccess(user: ReviewedUser, question: AccessQuestion, apis: ReviewApis, logger: AppLogger): Promise<AuthDecision> {
  try {
    // Groups, uid and extra come from the TokenReview: without them RBAC bindings to groups would not apply.
    const sar = await apis.authz.createSubjectAccessReview({
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: user.username,
          ...(user.uid !== undefined ? { uid: user.uid } : {}),
          ...(user.groups !== undefined ? { groups: user.groups } : {}),
          ...(user.extra !== undefined ? { extra: user.extra } : {}),
          resourceAttributes: {
            ...(question.namespace !== undefined ? { namespace: question.namespace } : {}),
            verb: question.verb,
            group: '',
            resource: question.resource,
            ...(question.name !== undefined ? { name: question.name } : {}),
          },
        },
      },
    });
    if (sar.status?.allowed === true) return { allowed: true, username: user.username };
    logger.info('UserRequestForbidden', { user: user.username, verb: question.verb, resource: question.resource, ...(question.namespace !== undefined ? { namespace: question.namespace } : {}) });
    return { allowed: false, code: 403, reason: 'Forbidden', message: forbiddenMessage(user.username, question) };
  } catch (err) {
    logger.error('SubjectAccessReviewFailed', { error: statusMessage(err) });
    return { allowed: false, code: 500, reason: 'InternalError', message: 'could not check access' };
  }
}

/** kube-apiserver's wording, so a 403 reads as the user knows it from kubectl. */
export function forbiddenMessage(username: string, q: AccessQuestion): string {
  const subject = q.name !== undefined ? `${q.resource} "${q.name}"` : q.resource;
  const scope = q.namespace !== undefined ? `in the namespace "${q.namespace}"` : 'at the cluster scope';
  return `${subject} is forbidden: User "${username}" cannot ${q.verb} resource "${q.resource}" in API group "" ${scope}`;
}

/** TokenReview, then one SubjectAccessReview. */
export async function authorize(authorization: string | undefined, question: AccessQuestion, apis: ReviewApis, logger: AppLogger): Promise<AuthDecision> {
  const who = await authenticate(authorization, apis, logger);
  if (!who.ok) return { allowed: false, code: who.code, reason: who.reason, message: who.message };
  return reviewAccess(who.user, question, apis, logger);
}

export async function authorizePodRead(
  authorization: string | undefined,
  target: { readonly namespace: string; readonly name: string },
  apis: ReviewApis,
  logger: AppLogger,
): Promise<AuthDecision> {
  return authorize(authorization, { verb: 'get', resource: 'pods', namespace: target.namespace, name: target.name }, apis, logger);
}
