/**
 * What `npm run package` would deploy: the CloudFormation template generated offline from serverless.yml,
 * checked against docs/api.md §2 (routes), the storage design (tables, TTL) and least privilege (one
 * role per function, DynamoDB actions only on the tables' ARNs). Also the two generators behind it.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { buildFunctionRoles, RoleConfigError, type FunctionRolesInput } from '../../../infra/aws/roles';
import { buildQueryDefinitions, QueryDefinitionError } from '../../../infra/cloudwatch/queries';
import { packageService, resourcesOfType, type CfnTemplate, type PackagedService } from './packageService';

const repoRoot = path.resolve(__dirname, '../../..');
const queriesDir = path.join(repoRoot, 'infra/cloudwatch');

/** docs/api.md §2: every route, the function serving it, and whether SigV4 (AWS_IAM) guards it. */
const contractRoutes = [
  { routeKey: 'POST /filter', fn: 'filter', iam: true },
  { routeKey: 'POST /filter/ahead', fn: 'decideAhead', iam: true },
  { routeKey: 'POST /bind', fn: 'bind', iam: true },
  { routeKey: 'POST /bind/outcome', fn: 'bindOutcome', iam: true },
  { routeKey: 'POST /preemption/refused', fn: 'evictionRefused', iam: true },
  { routeKey: 'POST /cluster/events', fn: 'clusterEvents', iam: true },
  { routeKey: 'GET /api/v1/namespaces/{ns}/pods/{name}/schedulerlog', fn: 'schedulerLog', iam: true },
  { routeKey: 'GET /api/v1/nodes/{name}/devices', fn: 'nodeDevices', iam: true },
  { routeKey: 'GET /api/v1/nodes', fn: 'listNodes', iam: true },
  { routeKey: 'GET /api/v1/namespaces/{ns}/schedulerlogs', fn: 'namespaceSchedulerLogs', iam: true },
  { routeKey: 'GET /api/v1/schedulerlogs', fn: 'allSchedulerLogs', iam: true },
  { routeKey: 'GET /healthz', fn: 'healthz', iam: false },
] as const;

type FunctionName = (typeof contractRoutes)[number]['fn'];

/** The team's least-privilege table: DynamoDB actions per function and table, nothing else. */
const leastPrivilege: Record<FunctionName, Partial<Record<'StateTable' | 'RecordsTable', string[]>>> = {
  filter: { StateTable: ['BatchGetItem', 'UpdateItem', 'Query'], RecordsTable: ['BatchWriteItem'] },
  decideAhead: { StateTable: ['BatchGetItem', 'UpdateItem', 'Query'], RecordsTable: ['BatchWriteItem'] },
  bind: { StateTable: ['UpdateItem', 'BatchGetItem'], RecordsTable: ['UpdateItem', 'PutItem'] },
  bindOutcome: { StateTable: ['UpdateItem'], RecordsTable: ['UpdateItem', 'PutItem'] },
  evictionRefused: { StateTable: ['BatchGetItem', 'UpdateItem'] },
  clusterEvents: { StateTable: ['BatchGetItem', 'UpdateItem', 'PutItem', 'Query'] },
  schedulerLog: { StateTable: ['BatchGetItem', 'Query'], RecordsTable: ['Query', 'BatchGetItem'] },
  nodeDevices: { StateTable: ['BatchGetItem'] },
  listNodes: { StateTable: ['BatchGetItem'] },
  namespaceSchedulerLogs: { RecordsTable: ['Query'] },
  allSchedulerLogs: { RecordsTable: ['Query'] },
  healthz: {},
};

const relayRoutes = [
  'POST /filter',
  'POST /filter/ahead',
  'POST /bind',
  'POST /bind/outcome',
  'POST /preemption/refused',
  'POST /cluster/events',
  'GET /api/v1/namespaces/{ns}/pods/{name}/schedulerlog',
  'GET /api/v1/nodes',
  'GET /api/v1/namespaces/{ns}/schedulerlogs',
  'GET /api/v1/schedulerlogs',
];
const operatorRoutes = [
  'GET /api/v1/namespaces/{ns}/pods/{name}/schedulerlog',
  'GET /api/v1/nodes/{name}/devices',
  'GET /api/v1/nodes',
  'GET /api/v1/namespaces/{ns}/schedulerlogs',
  'GET /api/v1/schedulerlogs',
];

const getAtt = z.object({ 'Fn::GetAtt': z.tuple([z.string(), z.literal('Arn')]) });
const ref = z.object({ Ref: z.string() });
const oneOrMany = <T extends z.ZodTypeAny>(item: T) =>
  z.union([item, z.array(item)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.infer<T>[]);

const statementSchema = z.object({
  Effect: z.enum(['Allow', 'Deny']),
  Action: oneOrMany(z.string()),
  Resource: oneOrMany(z.unknown()),
});
type Statement = z.infer<typeof statementSchema>;
const policyDocument = z.object({ Statement: z.array(statementSchema) });

const functionProperties = z.object({
  Handler: z.string(),
  Runtime: z.string(),
  MemorySize: z.number(),
  Timeout: z.number(),
  Architectures: z.array(z.string()),
  TracingConfig: z.object({ Mode: z.string() }),
  Environment: z.object({ Variables: z.record(z.string(), z.unknown()) }),
  Role: getAtt,
});
const roleProperties = z.object({
  AssumeRolePolicyDocument: policyDocument.extend({
    Statement: z.array(z.object({ Principal: z.object({ Service: z.string() }), Action: z.string() })),
  }),
  Policies: z.array(z.object({ PolicyName: z.string(), PolicyDocument: policyDocument })),
  ManagedPolicyArns: z.array(z.unknown()).optional(),
});
const tableProperties = z.object({
  BillingMode: z.string(),
  AttributeDefinitions: z.array(z.object({ AttributeName: z.string(), AttributeType: z.string() })),
  KeySchema: z.array(z.object({ AttributeName: z.string(), KeyType: z.string() })),
  TimeToLiveSpecification: z.object({ AttributeName: z.string(), Enabled: z.boolean() }).optional(),
  PointInTimeRecoverySpecification: z.object({ PointInTimeRecoveryEnabled: z.boolean() }).optional(),
  SSESpecification: z.object({ SSEEnabled: z.boolean() }),
});
const routeProperties = z.object({
  RouteKey: z.string(),
  AuthorizationType: z.string().optional(),
  Target: z.object({ 'Fn::Join': z.tuple([z.literal('/'), z.tuple([z.literal('integrations'), ref])]) }),
});
const integrationProperties = z.object({ IntegrationUri: getAtt });
const queryDefinitionProperties = z.object({
  Name: z.string(),
  QueryString: z.string(),
  LogGroupNames: z.array(ref),
});

const pascal = (fn: string): string => fn.charAt(0).toUpperCase() + fn.slice(1);

function propertiesOf<T extends z.ZodTypeAny>(template: CfnTemplate, logicalId: string, schema: T): z.infer<T> {
  const resource = template.Resources[logicalId];
  if (resource === undefined) throw new Error(`template has no resource ${logicalId}`);
  return schema.parse(resource.Properties);
}

/** Every IAM statement in the template, with where it came from. */
function allStatements(template: CfnTemplate): { owner: string; statement: Statement }[] {
  const found: { owner: string; statement: Statement }[] = [];
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (resource.Type === 'AWS::IAM::Role') {
      for (const policy of roleProperties.parse(resource.Properties).Policies) {
        for (const statement of policy.PolicyDocument.Statement) found.push({ owner: id, statement });
      }
    } else if (resource.Type === 'AWS::IAM::ManagedPolicy' || resource.Type === 'AWS::IAM::Policy') {
      const document = z.object({ PolicyDocument: policyDocument }).parse(resource.Properties).PolicyDocument;
      for (const statement of document.Statement) found.push({ owner: id, statement });
    }
  }
  return found;
}

function roleOf(template: CfnTemplate, fn: FunctionName): string {
  return propertiesOf(template, `${pascal(fn)}LambdaFunction`, functionProperties).Role['Fn::GetAtt'][0];
}

/** DynamoDB actions a role allows, per table logical id, sorted. */
function dynamoAccessOf(template: CfnTemplate, roleId: string): Record<string, string[]> {
  const access: Record<string, string[]> = {};
  for (const policy of propertiesOf(template, roleId, roleProperties).Policies) {
    for (const statement of policy.PolicyDocument.Statement) {
      const actions = statement.Action.filter((a) => a.startsWith('dynamodb:')).map((a) => a.slice('dynamodb:'.length));
      if (actions.length === 0) continue;
      for (const resource of statement.Resource) {
        const table = getAtt.parse(resource)['Fn::GetAtt'][0];
        access[table] = [...(access[table] ?? []), ...actions].sort();
      }
    }
  }
  return access;
}

/** The `*.query` files shipped in infra/cloudwatch, as the query each one defines. */
function shippedQueries(): { name: string; query: string }[] {
  return readdirSync(queriesDir)
    .filter((file) => file.endsWith('.query'))
    .map((file) => {
      const lines = readFileSync(path.join(queriesDir, file), 'utf8').replace(/\r\n/g, '\n').split('\n');
      const body = lines[0]?.startsWith('#') ? lines.slice(1) : lines;
      return { name: file.slice(0, -'.query'.length), query: body.join('\n').trim() };
    });
}

/** The routes a managed policy lets its holder invoke, as `METHOD /path` with `*` for each path parameter, sorted. */
function invokableRoutes(template: CfnTemplate, policyId: string): string[] {
  return allStatements(template)
    .filter(({ owner }) => owner === policyId)
    .flatMap(({ statement }) => {
      expect(statement.Action).toEqual(['execute-api:Invoke']);
      return statement.Resource.map((resource) => {
        const arn = z.object({ 'Fn::Sub': z.string() }).parse(resource)['Fn::Sub'];
        const match = /:\$\{HttpApi\}\/\*\/([A-Z]+)(\/.*)$/.exec(arn);
        if (match === null) throw new Error(`unexpected execute-api ARN ${arn}`);
        return `${match[1]} ${match[2]}`;
      });
    })
    .sort();
}

const asArnPattern = (routeKey: string): string => routeKey.replace(/\{[^}]+\}/g, '*');

/** What docs/deploy.md says the stack creates: its counts, the functions its diagram names, each policy's routes. */
function deployDoc(): {
  readonly routes: number;
  readonly functions: number;
  readonly diagramFunctions: string[];
  readonly relayProse: string[];
  readonly relayJson: string[];
  readonly operatorProse: string[];
} {
  const text = readFileSync(path.join(repoRoot, 'docs/deploy.md'), 'utf8');
  const count = (pattern: RegExp): number => {
    const match = pattern.exec(text);
    if (!match?.[1]) throw new Error(`docs/deploy.md: nothing matches ${String(pattern)}`);
    return Number(match[1]);
  };
  const between = (start: string, end: string): string => {
    const from = text.indexOf(start);
    const to = text.indexOf(end, from + start.length);
    if (from < 0 || to < 0) throw new Error(`docs/deploy.md: no text between "${start}" and "${end}"`);
    return text.slice(from + start.length, to);
  };
  const routesIn = (prose: string): string[] => [...prose.matchAll(/`((?:GET|POST) \/[^`]*)`/g)].map((m) => m[1] ?? '').sort();
  const diagram = /--> HTTP API --> ([^\n]+)/.exec(text)?.[1] ?? '';
  return {
    routes: count(/\| HTTP API, (\d+) routes/),
    functions: count(/\| (\d+) Lambda functions \|/),
    diagramFunctions: diagram.split(',').map((name) => name.trim()).filter((name) => name !== '').sort(),
    relayProse: routesIn(between('**Relay**: `RelayInvokePolicyArn`.', '```json')),
    relayJson: [...between('```json', '```').matchAll(/\/\*\/([A-Z]+)(\/[^"]*)"/g)].map((m) => `${m[1] ?? ''} ${m[2] ?? ''}`).sort(),
    operatorProse: routesIn(between('**Operators**: `OperatorReadPolicyArn`.', 'Any SigV4 client')),
  };
}

describe('serverless.yml packaged offline (stage test, eu-west-1, --param logVerbosity=5)', () => {
  let packaged: PackagedService | undefined;
  let template: CfnTemplate;

  beforeAll(async () => {
    packaged = await packageService({
      serviceDir: repoRoot,
      stage: 'test',
      region: 'eu-west-1',
      params: { logVerbosity: '5' },
    });
    template = packaged.template;
  }, 180_000);

  afterAll(() => packaged?.cleanup());

  it('serves exactly the docs/api.md routes, each from its own function, IAM-guarded except /healthz', () => {
    const routes = [...resourcesOfType(template, 'AWS::ApiGatewayV2::Route').keys()].map((id) => {
      const route = propertiesOf(template, id, routeProperties);
      const integration = propertiesOf(template, route.Target['Fn::Join'][1][1].Ref, integrationProperties);
      const functionId = integration.IntegrationUri['Fn::GetAtt'][0];
      return {
        routeKey: route.RouteKey,
        handler: propertiesOf(template, functionId, functionProperties).Handler,
        authorization: route.AuthorizationType ?? 'NONE',
      };
    });
    const expected = contractRoutes.map((r) => ({
      routeKey: r.routeKey,
      handler: `functions/${r.fn}.handler`,
      authorization: r.iam ? 'AWS_IAM' : 'NONE',
    }));
    const byKey = (a: { routeKey: string }, b: { routeKey: string }) => a.routeKey.localeCompare(b.routeKey);
    expect(routes.sort(byKey)).toEqual(expected.sort(byKey));
  });

  it('declares both tables with pk/sk string keys, on-demand, encrypted; TTL on records, PITR on state', () => {
    const keys = {
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      SSESpecification: { SSEEnabled: true },
    };
    expect([...resourcesOfType(template, 'AWS::DynamoDB::Table').keys()].sort()).toEqual(['RecordsTable', 'StateTable']);
    const records = propertiesOf(template, 'RecordsTable', tableProperties);
    expect(records).toMatchObject(keys);
    expect(records.TimeToLiveSpecification).toEqual({ AttributeName: 'expiresAt', Enabled: true });
    const state = propertiesOf(template, 'StateTable', tableProperties);
    expect(state).toMatchObject(keys);
    expect(state.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
  });

  it('gives every function its own role, and no shared framework role', () => {
    const roles = contractRoutes.map((r) => roleOf(template, r.fn));
    expect(new Set(roles).size).toBe(contractRoutes.length);
    for (const roleId of roles) expect(template.Resources[roleId]?.Type).toBe('AWS::IAM::Role');
    expect(template.Resources.IamRoleLambdaExecution).toBeUndefined();
    expect(resourcesOfType(template, 'AWS::Lambda::Function').size).toBe(contractRoutes.length);
  });

  it('allows DynamoDB actions only on the two tables, never with wildcards', () => {
    const dynamoStatements = allStatements(template).filter(({ statement }) =>
      statement.Action.some((a) => a.toLowerCase().startsWith('dynamodb:') || a === '*'),
    );
    expect(dynamoStatements.length).toBeGreaterThan(0);
    for (const { owner, statement } of dynamoStatements) {
      for (const action of statement.Action) {
        expect({ owner, action }).toEqual({ owner, action: expect.stringMatching(/^dynamodb:[A-Za-z]+$/) });
      }
      for (const resource of statement.Resource) {
        expect({ owner, resource }).toEqual({
          owner,
          resource: { 'Fn::GetAtt': [expect.stringMatching(/^(StateTable|RecordsTable)$/), 'Arn'] },
        });
      }
    }
  });

  it.each(contractRoutes.map((r) => r.fn))("grants %s exactly its least-privilege set", (fn) => {
    const roleId = roleOf(template, fn);
    const expected = Object.fromEntries(
      Object.entries(leastPrivilege[fn]).map(([table, actions]) => [table, [...actions].sort()]),
    );
    expect(dynamoAccessOf(template, roleId)).toEqual(expected);

    // Beyond DynamoDB: its own log group and X-Ray (tracing is on), nothing else, no managed policies.
    const role = propertiesOf(template, roleId, roleProperties);
    expect(role.ManagedPolicyArns).toBeUndefined();
    expect(role.AssumeRolePolicyDocument.Statement).toEqual([
      expect.objectContaining({ Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' }),
    ]);
    const others = role.Policies.flatMap((p) => p.PolicyDocument.Statement).filter(
      (s) => !s.Action.some((a) => a.startsWith('dynamodb:')),
    );
    expect(others).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: [{ 'Fn::GetAtt': [`${pascal(fn)}LogGroup`, 'Arn'] }],
        }),
        expect.objectContaining({ Action: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'], Resource: ['*'] }),
      ]),
    );
    expect(others).toHaveLength(2);
  });

  it('packages with osls on the current Node.js runtime and prints no warning', () => {
    // A runtime the tool does not know, or one AWS deprecated, shows up as a warning in the packaging output.
    expect(packaged?.output ?? '').not.toMatch(/warn|deprecat|runtime/i);
    const runtimes = new Set([...resourcesOfType(template, 'AWS::Lambda::Function').keys()].map((id) => propertiesOf(template, id, functionProperties).Runtime));
    expect([...runtimes]).toEqual(['nodejs24.x']);
  });

  it('runs every function on arm64 with active tracing, sized as planned, logs kept 30 days', () => {
    const sizes = Object.fromEntries(
      contractRoutes.map((r) => {
        const props = propertiesOf(template, `${pascal(r.fn)}LambdaFunction`, functionProperties);
        expect(props.Architectures).toEqual(['arm64']);
        expect(props.TracingConfig).toEqual({ Mode: 'Active' });
        expect(props.Runtime).toBe('nodejs24.x');
        // The HTTP API gives up at 30 s; a longer Lambda timeout would only hide a dead request.
        expect(props.Timeout).toBeLessThan(30);
        return [r.fn, { memory: props.MemorySize, timeout: props.Timeout }];
      }),
    );
    expect(sizes.filter).toEqual({ memory: 1769, timeout: 10 });
    expect(sizes.bind).toEqual({ memory: 1024, timeout: 10 });
    for (const [id] of resourcesOfType(template, 'AWS::Logs::LogGroup')) {
      expect({ id, retention: template.Resources[id]?.Properties?.RetentionInDays }).toEqual({ id, retention: 30 });
    }
  });

  it('configures every function through the environment: tables by reference, defaults, --param overrides', () => {
    const expectedVariables = {
      STATE_TABLE: { Ref: 'StateTable' },
      RECORDS_TABLE: { Ref: 'RecordsTable' },
      HAMI_LOG_VERBOSITY: '5',
      HAMI_NODE_SCHEDULER_POLICY: 'binpack',
      HAMI_GPU_SCHEDULER_POLICY: 'spread',
      HAMI_NODE_LOCK_EXPIRE_SECONDS: '300',
      HAMI_RECORD_RETENTION_HOURS: '24',
      HAMI_REALTIME_CHECK: 'false',
      HAMI_REALTIME_CHECK_MODE: 'strict',
      HAMI_LOCK_AWARE: 'true',
      HAMI_BIND_LOCK_WAIT_SECONDS: '5',
      HAMI_VIEW_MAX_AGE_MS: '1000',
      HAMI_DEFAULT_MEMORY: '0',
      HAMI_DEFAULT_CORES: '0',
      HAMI_MEMORY_FACTOR: '1',
      POWERTOOLS_SERVICE_NAME: 'hami-scheduler',
      POWERTOOLS_METRICS_NAMESPACE: 'HamiScheduler',
      POWERTOOLS_LOG_LEVEL: 'INFO',
      POWERTOOLS_LOGGER_LOG_EVENT: 'false',
      POWERTOOLS_TRACE_ENABLED: 'true',
    };
    for (const r of contractRoutes) {
      const { Variables } = propertiesOf(template, `${pascal(r.fn)}LambdaFunction`, functionProperties).Environment;
      expect(Variables).toMatchObject(expectedVariables);
      for (const value of Object.values(Variables)) {
        // Lambda rejects non-string values; references are resolved by CloudFormation.
        expect(typeof value === 'string' || ref.safeParse(value).success).toBe(true);
      }
    }
  });

  it('defines one Logs Insights query per shipped .query file, over every function log group', () => {
    const definitions = [...resourcesOfType(template, 'AWS::Logs::QueryDefinition').keys()].map((id) =>
      propertiesOf(template, id, queryDefinitionProperties),
    );
    const functionLogGroups = contractRoutes.map((r) => ({ Ref: `${pascal(r.fn)}LogGroup` }));
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    expect(
      definitions.map((d) => ({ name: d.Name, query: d.QueryString, logGroups: d.LogGroupNames })).sort(byName),
    ).toEqual(
      shippedQueries()
        .map((q) => ({ name: `hami-explain-test/${q.name}`, query: q.query, logGroups: functionLogGroups }))
        .sort(byName),
    );
  });

  it('ships managed policies that let the relay and operators invoke exactly their routes', () => {
    const invokable = (policyId: string): string[] => invokableRoutes(template, policyId);
    expect(invokable('RelayInvokePolicy')).toEqual(relayRoutes.map(asArnPattern).sort());
    expect(invokable('OperatorReadPolicy')).toEqual(operatorRoutes.map(asArnPattern).sort());
    expect(template.Outputs).toEqual(
      expect.objectContaining({
        HttpApiUrl: expect.anything(),
        RelayInvokePolicyArn: { Description: expect.any(String), Value: { Ref: 'RelayInvokePolicy' } },
      }),
    );
  });

  it("matches docs/deploy.md: its route and function counts, its diagram, and each policy's routes", () => {
    const doc = deployDoc();
    const functionNames = [...resourcesOfType(template, 'AWS::Lambda::Function').keys()]
      .map((id) => propertiesOf(template, id, functionProperties).Handler.replace(/^functions\/(.*)\.handler$/, '$1'))
      .sort();
    expect({ routes: doc.routes, functions: doc.functions, diagram: doc.diagramFunctions }).toEqual({
      routes: resourcesOfType(template, 'AWS::ApiGatewayV2::Route').size,
      functions: functionNames.length,
      diagram: functionNames,
    });
    const relay = invokableRoutes(template, 'RelayInvokePolicy');
    expect({ prose: doc.relayProse, json: doc.relayJson }).toEqual({ prose: relay, json: relay });
    expect(doc.operatorProse).toEqual(invokableRoutes(template, 'OperatorReadPolicy'));
  });
});

describe('buildFunctionRoles', () => {
  const input = (overrides: Partial<FunctionRolesInput> = {}): FunctionRolesInput => ({
    functions: { filter: { role: 'FilterRole' }, healthz: { role: 'HealthzRole' } },
    tableAccess: { filter: { StateTable: ['GetItem', 'PutItem'] } },
    tracing: false,
    ...overrides,
  });

  it('scopes each table statement to that table and leaves X-Ray out when tracing is off', () => {
    const { Resources } = buildFunctionRoles(input());
    const statements = roleProperties.parse(z.object({ Properties: z.unknown() }).parse(Resources.FilterRole).Properties)
      .Policies.flatMap((p) => p.PolicyDocument.Statement);
    expect(statements).toEqual([
      expect.objectContaining({ Action: ['logs:CreateLogStream', 'logs:PutLogEvents'] }),
      expect.objectContaining({
        Action: ['dynamodb:GetItem', 'dynamodb:PutItem'],
        Resource: [{ 'Fn::GetAtt': ['StateTable', 'Arn'] }],
      }),
    ]);
    expect(Object.keys(Resources).sort()).toEqual(['FilterRole', 'HealthzRole']);
  });

  it.each([
    ['a function not naming its role', input({ functions: { filter: { role: 'SharedRole' } } }), /must set "role: FilterRole"/],
    ['access for an unknown function', input({ tableAccess: { filtr: { StateTable: ['GetItem'] } } }), /"filtr", which is not a function/],
    ['an action outside the grantable set', input({ tableAccess: { filter: { StateTable: ['Scan'] } } }), /"Scan" is not a grantable/],
    ['a wildcard action', input({ tableAccess: { filter: { StateTable: ['*'] } } }), /"\*" is not a grantable/],
    ['an empty action list', input({ tableAccess: { filter: { StateTable: [] } } }), /at least one DynamoDB action/],
    ['logs disabled', input({ functions: { filter: { role: 'FilterRole', disableLogs: true } }, tableAccess: {} }), /disables logs/],
  ])('rejects %s', (_case, bad, message) => {
    expect(() => buildFunctionRoles(bad)).toThrow(RoleConfigError);
    expect(() => buildFunctionRoles(bad)).toThrow(message);
  });
});

describe('buildQueryDefinitions', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'hami-queries-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const logGroupNames = [{ Ref: 'FilterLogGroup' }, '/aws/lambda/other'];

  it('turns each .query file into a named definition without its description line', () => {
    writeFileSync(path.join(dir, 'failures-by-reason.query'), '# Failures by reason\nfields @timestamp\n| stats count() by reason\n');
    writeFileSync(path.join(dir, 'lock_contention.query'), 'filter message = "NodeLockContention"\r\n');
    writeFileSync(path.join(dir, 'README.md'), '# not a query');
    expect(buildQueryDefinitions({ dir, logGroupNames, folder: 'svc-dev' })).toEqual({
      Resources: {
        FailuresByReasonQueryDefinition: {
          Type: 'AWS::Logs::QueryDefinition',
          Properties: {
            Name: 'svc-dev/failures-by-reason',
            QueryString: 'fields @timestamp\n| stats count() by reason',
            LogGroupNames: logGroupNames,
          },
        },
        LockContentionQueryDefinition: {
          Type: 'AWS::Logs::QueryDefinition',
          Properties: {
            Name: 'svc-dev/lock_contention',
            QueryString: 'filter message = "NodeLockContention"',
            LogGroupNames: logGroupNames,
          },
        },
      },
    });
  });

  it('yields no resources when there are no query files or no directory', () => {
    expect(buildQueryDefinitions({ dir, logGroupNames })).toEqual({ Resources: {} });
    expect(buildQueryDefinitions({ dir: path.join(dir, 'missing'), logGroupNames })).toEqual({ Resources: {} });
  });

  it.each([
    ['a file with only a description', { 'empty.query': '# nothing here\n\n' }, /empty.query holds no query/],
    ['two files mapping to one logical id', { 'a-b.query': 'fields a', 'a_b.query': 'fields b' }, /both map to ABQueryDefinition/],
    ['a query over the API limit', { 'huge.query': `fields ${'x'.repeat(10_000)}` }, /Logs Insights allows 10000/],
  ])('rejects %s', (_case, files, message) => {
    mkdirSync(dir, { recursive: true });
    for (const [file, content] of Object.entries(files)) writeFileSync(path.join(dir, file), content);
    expect(() => buildQueryDefinitions({ dir, logGroupNames })).toThrow(QueryDefinitionError);
    expect(() => buildQueryDefinitions({ dir, logGroupNames })).toThrow(message);
  });
});
