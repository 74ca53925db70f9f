/** Types for queries.js (CommonJS, loaded by serverless at package time). */
export interface QueryDefinitionsInput {
  /** Directory holding the `*.query` files. */
  readonly dir: string;
  /** Log group names or CloudFormation references to them. */
  readonly logGroupNames: readonly unknown[];
  /** Console folder: names become `<folder>/<file name without .query>`. */
  readonly folder?: string;
}

export function buildQueryDefinitions(input: QueryDefinitionsInput): { Resources: Record<string, unknown> };

export class QueryDefinitionError extends Error {}
