/**
 * Who may read a pod's scheduler log: the caller's bearer token is checked with a TokenReview, then a
 * SubjectAccessReview must allow `get pods` in the namespace (docs/api.md §7). The token is never
 * logged and never leaves this module except to the API server.
 */
import type { AuthenticationV1Api, AuthorizationV1Api } from '@kubernetes/client-node';
import type { AppLogger } from '../powertools';
import { bearerToken } from '../http/bearer';
import { statusMessage } from './kubeWriter';
import type { LogSampler } from './tokenGate';

export interface ReviewApis {
  readonly authn: Pick<AuthenticationV1Api, 'createTokenReview'>;
  readonly authz: Pick<AuthorizationV1Api, 'createSubjectAccessReview'>;
}

export type AuthDecision =
  | { readonly allowed: true; readonly username: string }
  | { readonly allowed: false; readonly code: 401 | 403 | 500; readonly reason: 'Unauthorized' | 'Forbidden' | 'InternalError'; readonly message: string };

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

/**
 * The caller's identity from their token, or why not (401, or 500 when the review itself failed). With a sampler,
 * refused tokens are logged once per window, with a count (a flood of random tokens is not a flood of log lines).
 */
export async function authenticate(authorization: string | undefined, apis: ReviewApis, logger: AppLogger, sampler?: LogSampler): Promise<{ readonly ok: true; readonly user: ReviewedUser } | ({ readonly ok: false } & Denial)> {
  const token = bearerToken(authorization);
  if (token === undefined) return { ok: false, allowed: false, code: 401, reason: 'Unauthorized', message: 'a bearer token is required' };
  try {
    const review = await apis.authn.createTokenReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    });
    if (review.status?.authenticated !== true) {
      const notLogged = sampler === undefined ? 0 : sampler.sample('TokenRejected');
      if (notLogged !== undefined) logger.info('TokenRejected', { reason: review.status?.error ?? 'not authenticated', ...(notLogged > 0 ? { notLogged } : {}) });
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

/**
 * Whether the user may, by a SubjectAccessReview; a review that fails is a 500 denial, never an allowance. A refusal
 * is logged as `UserRequestForbidden` unless `logRefusal` is false: a question asked only to filter what an answer
 * shows (whose pods a list may name) refuses no request.
 */
export async function reviewAccess(user: ReviewedUser, question: AccessQuestion, apis: ReviewApis, logger: AppLogger, logRefusal = true): Promise<AuthDecision> {
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
    if (logRefusal) logger.info('UserRequestForbidden', { user: user.username, verb: question.verb, resource: question.resource, ...(question.namespace !== undefined ? { namespace: question.namespace } : {}) });
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
