/**
 * Creates the two tables where no CloudFormation runs (the local server, tests). Shapes match
 * serverless.yml; TTL is declared there only (dynalite has no UpdateTimeToLive).
 */
import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Sleep } from '../clock';

export async function ensureTables(client: DynamoDBClient, tables: readonly string[], sleep: Sleep): Promise<void> {
  for (const table of tables) {
    try {
      await client.send(
        new CreateTableCommand({
          TableName: table,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [
            { AttributeName: 'pk', AttributeType: 'S' },
            { AttributeName: 'sk', AttributeType: 'S' },
          ],
          KeySchema: [
            { AttributeName: 'pk', KeyType: 'HASH' },
            { AttributeName: 'sk', KeyType: 'RANGE' },
          ],
        }),
      );
    } catch (err) {
      if (!(err instanceof Error && err.name === 'ResourceInUseException')) throw err;
    }
    for (let i = 0; i < 100; i++) {
      const out = await client.send(new DescribeTableCommand({ TableName: table }));
      if (out.Table?.TableStatus === 'ACTIVE') break;
      await sleep(50);
    }
  }
}
