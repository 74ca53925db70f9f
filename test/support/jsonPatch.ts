/** Applies an RFC 6902 patch (add, replace, remove) as the API server does with a webhook's answer. Test-only. */
export function applyJsonPatch(document: unknown, ops: readonly { op: string; path: string; value?: unknown }[]): unknown {
  const root = { doc: structuredClone(document) } as Record<string, unknown>;
  for (const op of ops) {
    const tokens = op.path === '' ? [] : op.path.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
    let parent: Record<string, unknown> | unknown[] = root;
    let key: string = 'doc';
    for (const token of tokens) {
      const next: unknown = (parent as Record<string, unknown>)[key];
      if (next === null || typeof next !== 'object') throw new Error(`path ${op.path}: ${key} is not a container`);
      parent = next as Record<string, unknown>;
      key = token;
    }
    if (Array.isArray(parent)) {
      const index = key === '-' ? parent.length : Number(key);
      if (op.op === 'add') parent.splice(index, 0, op.value);
      else if (op.op === 'replace') parent[index] = op.value;
      else if (op.op === 'remove') parent.splice(index, 1);
      continue;
    }
    if ((op.op === 'replace' || op.op === 'remove') && !(key in parent)) throw new Error(`path ${op.path} does not exist`);
    if (op.op === 'add' || op.op === 'replace') parent[key] = op.value;
    else if (op.op === 'remove') delete parent[key];
    else throw new Error(`unsupported op ${op.op}`);
  }
  return root.doc;
}

/** The JSON patch inside an AdmissionReview response, decoded. */
export function decodeAdmissionPatch(response: { patch?: string; patchType?: string }): { op: string; path: string; value?: unknown }[] {
  if (response.patch === undefined) return [];
  expect(response.patchType).toBe('JSONPatch');
  return JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as { op: string; path: string; value?: unknown }[];
}
