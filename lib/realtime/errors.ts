/** Typed failures of the node agent. Each says what went wrong in terms an operator can act on. */

/** The agent's environment is invalid; the message names the offending variable(s). */
export class NodeAgentConfigError extends Error {
  override readonly name = 'NodeAgentConfigError';
  constructor(
    message: string,
    /** One entry per bad variable. */
    readonly issues: readonly { readonly key: string; readonly message: string }[],
  ) {
    super(message);
  }
}

/** The nvidia-smi binary is not on the path (no driver utilities mounted into the container). */
export class NvidiaSmiNotFoundError extends Error {
  override readonly name = 'NvidiaSmiNotFoundError';
}

/** nvidia-smi ran longer than the configured timeout and was killed. */
export class NvidiaSmiTimeoutError extends Error {
  override readonly name = 'NvidiaSmiTimeoutError';
}

/** nvidia-smi could not be started for another reason (permissions, resource limits). */
export class NvidiaSmiSpawnError extends Error {
  override readonly name = 'NvidiaSmiSpawnError';
}

/** nvidia-smi exited with a non-zero code (e.g. 9: driver not loaded). */
export class NvidiaSmiExitError extends Error {
  override readonly name = 'NvidiaSmiExitError';
  constructor(
    message: string,
    readonly exitCode: number,
    /** First line of its standard error or output, which usually says why. */
    readonly detail: string,
  ) {
    super(message);
  }
}

/** The Kubernetes API refused or did not answer the Node patch. */
export class NodePatchError extends Error {
  override readonly name = 'NodePatchError';
  constructor(
    message: string,
    /** HTTP status when the API server answered. */
    readonly statusCode: number | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
