/**
 * Kubernetes object names as every boundary checks them (extender bodies, cluster events, API paths): a name
 * longer than Kubernetes allows, or with a character no Kubernetes name has, is bad input, refused before it
 * reaches a key in the store (where it would fail as a DynamoDB key size error, or collide with our separators).
 */
import { z } from 'zod';

/** DNS subdomain names (pods, nodes, quotas): at most 253 characters. */
export const MAX_NAME_LENGTH = 253;
/** Namespaces are DNS labels: at most 63 characters. */
export const MAX_NAMESPACE_LENGTH = 63;

// No separators of our keys ('/', '#'), no whitespace or control characters.
const SAFE = /^[^\s/#\p{Cc}]+$/u;
const safeMessage = 'must be a Kubernetes name (no "/", "#", spaces or control characters)';

export const kubeName = z.string().min(1, 'must not be empty').max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`).regex(SAFE, safeMessage);

/** Whether `kubeName` accepts the value: its three checks in one expression, for lists of thousands. */
export function isKubeName(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= MAX_NAME_LENGTH && SAFE.test(value);
}

/**
 * A list of names such as kube-scheduler's NodeNames (every node of the cluster, with every filter): checked in one
 * pass, where zod's per-element checks cost 0.1 to 0.2 ms per 1,000 names. A list holding a bad name is checked
 * name by name by `kubeName`, so the issues are the ones `z.array(kubeName)` reports.
 */
export const kubeNames = z.array(z.string()).superRefine((names, ctx) => {
  if (names.every(isKubeName)) return;
  for (const issue of z.array(kubeName).safeParse(names).error?.issues ?? []) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
});

/**
 * Kubernetes' own rules (apimachinery's IsDNS1123Label / IsDNS1123Subdomain), for the objects whose names Kubernetes
 * checks so: a namespace is a DNS-1123 label, a pod's name a DNS-1123 subdomain. Node names keep `kubeName`'s looser
 * check (kube-scheduler's NodeNames are checked in one pass per filter, `kubeNames`).
 */
const DNS1123_LABEL = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;
const labelMessage = "must be a lowercase RFC 1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit";
const subdomainMessage = "must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit";

/** Namespaces are DNS-1123 labels, as Kubernetes validates them: `-bad-`, `UPPER`, `a_b` or `é` name none. */
export const kubeNamespace = z
  .string()
  .min(1, 'must not be empty')
  .max(MAX_NAMESPACE_LENGTH, `must be at most ${MAX_NAMESPACE_LENGTH} characters`)
  .regex(DNS1123_LABEL, labelMessage);

/** Pod names are DNS-1123 subdomains, as Kubernetes validates them. */
export const kubePodName = z
  .string()
  .min(1, 'must not be empty')
  .max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`)
  .regex(DNS1123_SUBDOMAIN, subdomainMessage);
/** Pod uids are UUIDs; anything of a sane length is accepted, since they only key bookings. */
export const kubeUid = z.string().min(1, 'must not be empty').max(128, 'must be at most 128 characters').regex(SAFE, safeMessage);
