/**
 * Writes Node annotations through the Kubernetes API. Kept apart from the agent's loop because
 * @kubernetes/client-node is ESM-only and heavy: the loop and its tests never load it.
 */
import { ApiException, CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { NodePatchError } from './errors';

export const NODE_AGENT_FIELD_MANAGER = 'hami-node-agent';

export function createKubeNodePatcher(
  kc: KubeConfig,
  timeoutMs: number,
): (name: string, annotations: Readonly<Record<string, string | null>>) => Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  // client-node 1.x defaults patch bodies to JSON Patch; a plain object needs the merge-patch content type.
  const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  return async (name, annotations) => {
    let timer: NodeJS.Timeout | undefined;
    // The client has no request timeout of its own; a stuck API connection must not freeze the loop.
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new NodePatchError(`patch of node ${name} timed out after ${timeoutMs} ms`, undefined)), timeoutMs);
    });
    try {
      await Promise.race([
        core.patchNode({ name, body: { metadata: { annotations } }, fieldManager: NODE_AGENT_FIELD_MANAGER }, mergePatch),
        timeout,
      ]);
    } catch (err) {
      if (err instanceof NodePatchError) throw err;
      if (err instanceof ApiException) {
        throw new NodePatchError(`patch of node ${name} refused with HTTP ${err.code}`, err.code, { cause: err });
      }
      throw new NodePatchError(`patch of node ${name} failed`, undefined, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  };
}
