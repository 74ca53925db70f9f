/**
 * ClusterReader (lib/diagnostics/decisionTree.ts) on @kubernetes/client-node's CoreV1Api: hami-diag reads with the
 * user's kubeconfig (lib/cli/kubeClusterReader.ts), the relay with its own. Objects are parsed as the walk reads them.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { z } from 'zod';
import { clusterNodeSchema, clusterPodSchema, type ClusterNode, type ClusterPod, type ClusterReader } from '../diagnostics/decisionTree';
import { errorMessage } from '../errors';

export class ClusterReadError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ClusterReadError';
  }
}

type CoreApi = Pick<CoreV1Api, 'readNamespacedPod' | 'readNode'>;

export class KubeClusterReader implements ClusterReader {
  constructor(private readonly api: CoreApi) {}

  async getPod(namespace: string, name: string): Promise<ClusterPod | undefined> {
    return this.read(() => this.api.readNamespacedPod({ name, namespace }), clusterPodSchema, `pod ${namespace}/${name}`);
  }

  async getNode(name: string): Promise<ClusterNode | undefined> {
    return this.read(() => this.api.readNode({ name }), clusterNodeSchema, `node ${name}`);
  }

  private async read<T>(call: () => Promise<unknown>, schema: z.ZodType<T>, what: string): Promise<T | undefined> {
    let object: unknown;
    try {
      object = await call();
    } catch (err) {
      const status = statusOf(err);
      if (status === 404) return undefined;
      // ApiException's own message embeds headers and the whole body: too noisy for one line.
      const detail = status === undefined ? (errorMessage(err)) : `the Kubernetes API answered ${status}${bodyMessage(err)}`;
      throw new ClusterReadError(`reading ${what}: ${detail}`, status, { cause: err });
    }
    const parsed = schema.safeParse(object);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    throw new ClusterReadError(`reading ${what}: the Kubernetes API answered an object the scheduler cannot read (${issue?.path.join('.') || '(object)'}: ${issue?.message ?? 'invalid'})`, undefined);
  }
}

function statusOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

function bodyMessage(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  if (typeof body !== 'string') return '';
  try {
    const message = (JSON.parse(body) as { message?: unknown }).message;
    return typeof message === 'string' ? ` (${message})` : '';
  } catch {
    return '';
  }
}
