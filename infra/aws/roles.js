'use strict';
/**
 * One IAM role per Lambda function, built from `custom.tableAccess` in serverless.yml, so each
 * function can do exactly what its table access says and nothing more (no shared execution role).
 *
 * serverless.yml merges `${file(./infra/aws/roles.js):roleResources}` into its resources; the pure
 * `buildFunctionRoles` is exported for tests.
 */

// The DynamoDB data-plane actions a function may be granted; anything else in tableAccess is a typo or
// a privilege this service never needs (Scan, DeleteTable, Transact*, ...).
const GRANTABLE_DYNAMODB_ACTIONS = new Set([
  'GetItem',
  'BatchGetItem',
  'Query',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'BatchWriteItem',
  'ConditionCheckItem',
]);

class RoleConfigError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'RoleConfigError';
  }
}

/** Serverless's own normalisation of a function name into a CloudFormation logical id prefix. */
function normalizedFunctionName(functionName) {
  const name = functionName.replace(/-/g, 'Dash').replace(/_/g, 'Underscore');
  return name.charAt(0).toUpperCase() + name.slice(1);
}

/** The logical id of the role a function must name in its `role:` setting. */
function roleLogicalId(functionName) {
  return `${normalizedFunctionName(functionName)}Role`;
}

/** The logical id serverless gives the function's log group (created because logs are not disabled). */
function logGroupLogicalId(functionName) {
  return `${normalizedFunctionName(functionName)}LogGroup`;
}

function tableStatements(functionName, access) {
  return Object.entries(access).map(([tableLogicalId, actions]) => {
    if (!Array.isArray(actions) || actions.length === 0) {
      throw new RoleConfigError(
        `custom.tableAccess.${functionName}.${tableLogicalId} must list at least one DynamoDB action`,
      );
    }
    for (const action of actions) {
      if (!GRANTABLE_DYNAMODB_ACTIONS.has(action)) {
        throw new RoleConfigError(
          `custom.tableAccess.${functionName}.${tableLogicalId}: "${action}" is not a grantable DynamoDB action ` +
            `(allowed: ${[...GRANTABLE_DYNAMODB_ACTIONS].join(', ')})`,
        );
      }
    }
    return {
      Sid: `${tableLogicalId}Access`.replace(/[^A-Za-z0-9]/g, ''),
      Effect: 'Allow',
      Action: [...new Set(actions)].map((action) => `dynamodb:${action}`),
      Resource: { 'Fn::GetAtt': [tableLogicalId, 'Arn'] },
    };
  });
}

/**
 * @param {{ functions: Record<string, { role?: unknown, disableLogs?: boolean }>,
 *           tableAccess: Record<string, Record<string, string[]>>, tracing: boolean }} input
 * @returns {{ Resources: Record<string, unknown> }}
 */
function buildFunctionRoles({ functions, tableAccess, tracing }) {
  for (const functionName of Object.keys(tableAccess)) {
    if (!(functionName in functions)) {
      throw new RoleConfigError(`custom.tableAccess names "${functionName}", which is not a function`);
    }
  }
  const resources = {};
  for (const [functionName, definition] of Object.entries(functions)) {
    const expectedRole = roleLogicalId(functionName);
    if (definition.role !== expectedRole) {
      throw new RoleConfigError(
        `function "${functionName}" must set "role: ${expectedRole}" (its least-privilege role); ` +
          `found ${JSON.stringify(definition.role)}`,
      );
    }
    if (definition.disableLogs === true) {
      throw new RoleConfigError(`function "${functionName}" disables logs; its role grants its log group`);
    }
    const statements = [
      {
        Sid: 'WriteOwnLogGroup',
        Effect: 'Allow',
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: { 'Fn::GetAtt': [logGroupLogicalId(functionName), 'Arn'] },
      },
    ];
    if (tracing) {
      // X-Ray has no resource-level permissions for these two actions; '*' is the only valid resource.
      statements.push({
        Sid: 'SendTraces',
        Effect: 'Allow',
        Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
        Resource: '*',
      });
    }
    statements.push(...tableStatements(functionName, tableAccess[functionName] ?? {}));
    resources[expectedRole] = {
      Type: 'AWS::IAM::Role',
      Properties: {
        AssumeRolePolicyDocument: {
          Version: '2012-10-17',
          Statement: [
            { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
          ],
        },
        Policies: [
          {
            PolicyName: `${functionName}-least-privilege`,
            PolicyDocument: { Version: '2012-10-17', Statement: statements },
          },
        ],
      },
    };
  }
  return { Resources: resources };
}

/** Serverless variable resolver entry point (`${file(./infra/aws/roles.js):roleResources}`). */
async function roleResources({ resolveVariable }) {
  const functions = (await resolveVariable('self:functions')) ?? {};
  const tableAccess = (await resolveVariable('self:custom.tableAccess')) ?? {};
  const tracing = (await resolveVariable('self:provider.tracing.lambda, false')) === true;
  return buildFunctionRoles({ functions, tableAccess, tracing });
}

module.exports = { buildFunctionRoles, roleResources, roleLogicalId, logGroupLogicalId, RoleConfigError };
