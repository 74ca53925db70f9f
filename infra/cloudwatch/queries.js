'use strict';
/**
 * CloudWatch Logs Insights saved queries: every `*.query` file in this directory becomes one
 * AWS::Logs::QueryDefinition, scoped to the functions' log groups, so operators find them under
 * "Saved queries" in the console (in a folder per stack).
 *
 * File format: an optional first line `# what the query answers` (a description for readers, stripped),
 * then the Logs Insights query. The query's name is the file name without `.query`.
 *
 * serverless.yml merges `${file(./infra/cloudwatch/queries.js):resources}` into its resources; the pure
 * `buildQueryDefinitions` is exported for tests.
 */
/* eslint-disable @typescript-eslint/no-require-imports -- serverless loads this file with require(): CommonJS it must be */
const fs = require('node:fs');
const path = require('node:path');
const { logGroupLogicalId } = require('../aws/roles.js');
/* eslint-enable @typescript-eslint/no-require-imports -- only the imports above need require() */

const QUERY_SUFFIX = '.query';
// The PutQueryDefinition API's limit on queryString.
const MAX_QUERY_LENGTH = 10000;

class QueryDefinitionError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'QueryDefinitionError';
  }
}

/** `failures-by-reason` -> `FailuresByReason`: CloudFormation logical ids are alphanumeric. */
function pascalCase(name) {
  return name
    .split(/[^A-Za-z0-9]+/)
    .filter((part) => part.length > 0)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

/** The query text of a `.query` file: the description line removed, surrounding blank lines trimmed. */
function queryText(fileName, content) {
  const lines = content.replace(/\r\n/g, '\n').split('\n');
  if (lines[0] !== undefined && lines[0].trimStart().startsWith('#')) lines.shift();
  const text = lines.join('\n').trim();
  if (text === '') throw new QueryDefinitionError(`${fileName} holds no query`);
  if (text.length > MAX_QUERY_LENGTH) {
    throw new QueryDefinitionError(`${fileName} is ${text.length} characters; Logs Insights allows ${MAX_QUERY_LENGTH}`);
  }
  return text;
}

/**
 * @param {{ dir: string, logGroupNames: unknown[], folder?: string }} input
 *   logGroupNames: names or CloudFormation references (e.g. `{ Ref: 'FilterLogGroup' }`);
 *   folder: prefix shown as a folder in the console (`<folder>/<query name>`).
 * @returns {{ Resources: Record<string, unknown> }}
 */
function buildQueryDefinitions({ dir, logGroupNames, folder }) {
  const files = fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .filter((file) => file.endsWith(QUERY_SUFFIX))
        .sort()
    : [];
  const resources = {};
  const sourceOf = {};
  for (const file of files) {
    const name = file.slice(0, -QUERY_SUFFIX.length);
    const logicalId = `${pascalCase(name)}QueryDefinition`;
    if (logicalId === 'QueryDefinition') {
      throw new QueryDefinitionError(`${file}: the file name needs at least one letter or digit`);
    }
    if (sourceOf[logicalId] !== undefined) {
      throw new QueryDefinitionError(`${sourceOf[logicalId]} and ${file} both map to ${logicalId}; rename one`);
    }
    sourceOf[logicalId] = file;
    resources[logicalId] = {
      Type: 'AWS::Logs::QueryDefinition',
      Properties: {
        Name: folder ? `${folder}/${name}` : name,
        QueryString: queryText(file, fs.readFileSync(path.join(dir, file), 'utf8')),
        LogGroupNames: logGroupNames,
      },
    };
  }
  return { Resources: resources };
}

/** Serverless variable resolver entry point: one query definition per file, over every function's logs. */
async function resources({ resolveVariable }) {
  const functions = (await resolveVariable('self:functions')) ?? {};
  const service = await resolveVariable('self:service');
  const stage = await resolveVariable('sls:stage');
  // Ref on a log group yields its name; it also makes the queries wait for the log groups to exist.
  const logGroupNames = Object.keys(functions).map((functionName) => ({
    Ref: logGroupLogicalId(functionName),
  }));
  return buildQueryDefinitions({ dir: __dirname, logGroupNames, folder: `${service}-${stage}` });
}

module.exports = { buildQueryDefinitions, resources, QueryDefinitionError };
