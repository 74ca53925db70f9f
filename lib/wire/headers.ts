/**
 * Header names on the wire between the relay and the control plane that both sides must spell the same way
 * (docs/api.md). Kept free of any import, so the relay's bundle takes nothing else with it.
 */

/**
 * Sent by the relay with every /filter: the change-journal entry its forwarded cluster events last produced.
 * The control plane decides on a view that includes it (docs/state.md, "Warm view").
 */
export const MIN_VIEW_SEQ_HEADER = 'x-hami-min-view-seq';
