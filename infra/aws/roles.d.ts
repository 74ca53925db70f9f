/** Types for roles.js (CommonJS, loaded by serverless at package time). */
export interface FunctionDefinition {
  readonly role?: unknown;
  readonly disableLogs?: boolean;
}

/** Per function: table logical id -> DynamoDB action names without the `dynamodb:` prefix. */
export type TableAccess = Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;

export interface FunctionRolesInput {
  readonly functions: Readonly<Record<string, FunctionDefinition>>;
  readonly tableAccess: TableAccess;
  readonly tracing: boolean;
}

export function buildFunctionRoles(input: FunctionRolesInput): { Resources: Record<string, unknown> };
export function roleLogicalId(functionName: string): string;
export function logGroupLogicalId(functionName: string): string;

export class RoleConfigError extends Error {}
