/**
 * The node annotation where the node agent (lib/realtime) reports the real memory use of the node's cards and the
 * control plane reads it with the node's other events (docs/realtime.md, docs/api.md §8): one name both sides import.
 */
export const REALTIME_ANNOTATION = 'hami.io/node-nvidia-realtime';
