/**
 * RFC 6902 JSON Patch from two JSON documents: what the admission webhook answers (the API server applies
 * the patch to the pod it sent). Objects are compared key by key; arrays of equal length element by element
 * (containers keep their places); anything else that differs is replaced whole.
 */
import { isJsonObject } from '../json';

export type JsonPatchOperation =
  | { readonly op: 'add'; readonly path: string; readonly value: unknown }
  | { readonly op: 'replace'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string };

/** A JSON Pointer token (RFC 6901): `~` becomes `~0`, `/` becomes `~1` (`nvidia.com/gpu` -> `nvidia.com~1gpu`). */
export function pointerToken(key: string | number): string {
  return String(key).replace(/~/g, '~0').replace(/\//g, '~1');
}

export function jsonPatch(before: unknown, after: unknown, path = ''): JsonPatchOperation[] {
  if (isJsonObject(before) && isJsonObject(after)) {
    const ops: JsonPatchOperation[] = [];
    for (const key of Object.keys(before)) {
      if (!(key in after)) ops.push({ op: 'remove', path: `${path}/${pointerToken(key)}` });
    }
    for (const [key, value] of Object.entries(after)) {
      const at = `${path}/${pointerToken(key)}`;
      if (!(key in before)) ops.push({ op: 'add', path: at, value });
      else ops.push(...jsonPatch(before[key], value, at));
    }
    return ops;
  }
  if (Array.isArray(before) && Array.isArray(after) && before.length === after.length) {
    return before.flatMap((item, i) => jsonPatch(item, after[i], `${path}/${i}`));
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [{ op: 'replace', path, value: after }];
}
