/**
 * The set-up and teardown integration suites repeat: the local server (the control plane's handlers over real HTTP,
 * with its embedded dynalite and tables) started before each test or once for a suite, nodes registered through
 * /cluster/events, and everything closed afterwards, also when a test or the set-up itself failed.
 */
import { startLocalServer, type LocalServer } from '../../lib/local/server';
import { controlClient, type ControlClient } from './cluster';

/** `test`: fresh for every test (beforeEach/afterEach); `suite`: one for the file or describe block that asks (beforeAll/afterAll). */
export type Lifetime = 'test' | 'suite';

/** Hands a close to the teardown; closes run last first. */
export type CloseLater = (close: () => Promise<void>) => void;

/**
 * Registers `setUp` before each test or the suite, and a teardown after it that runs every close `setUp` handed over,
 * last first, each one even when one before it throws and also when `setUp` failed half-way; then it throws what failed.
 */
export function lifecycle(per: Lifetime, setUp: (closeLater: CloseLater) => Promise<void>): void {
  const closes: (() => Promise<void>)[] = [];
  const before = per === 'test' ? beforeEach : beforeAll;
  const after = per === 'test' ? afterEach : afterAll;
  before(() => setUp((close) => closes.push(close)));
  after(async () => {
    const failures: unknown[] = [];
    for (const close of closes.splice(0).reverse()) {
      try {
        await close();
      } catch (err) {
        failures.push(err);
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, `${failures.length} closes failed`);
  });
}

/** What a rig holds between its hooks; reading it outside them is a mistake in the suite, said as such. */
export function running<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} is not running here: only the tests and hooks of the suite that set it up see it`);
  return value;
}

/** Registers `nodes` as the relay forwards them; throws, with the answer, unless every one is accepted. */
export async function registerNodes(api: ControlClient, nodes: readonly unknown[]): Promise<void> {
  if (nodes.length === 0) return;
  const res = await api.events(nodes.map((object) => ({ type: 'ADDED', object })));
  if (res.json?.accepted !== nodes.length || res.json.rejected.length !== 0) throw new Error(`nodes not registered: ${res.text}`);
}

export interface ControlPlaneOptions {
  readonly per: Lifetime;
  /** The bearer token the server requires (HAMI_API_TOKEN), which `api` sends; none by default. */
  readonly token?: string;
  /** Configuration as environment variables; this process's environment is never read. */
  readonly env?: Readonly<Record<string, string>>;
  /** Registered through /cluster/events once the server is up; the set-up fails unless every one is accepted. */
  readonly nodes?: readonly unknown[];
  /** Further set-up through the API, after the nodes. */
  readonly prepare?: (api: ControlClient) => Promise<void>;
}

export interface ControlPlane {
  /** The running server (its URL, its deps): only inside the suite's tests and hooks. */
  readonly server: LocalServer;
  /** A client of whichever server is running now: the current test's own, with `per: 'test'`. */
  readonly api: ControlClient;
}

/** A control plane on the local server for the tests of the calling file or describe block. */
export function useControlPlane(options: ControlPlaneOptions): ControlPlane {
  let server: LocalServer | undefined;
  const rig: ControlPlane = {
    get server() {
      return running(server, 'the control plane');
    },
    api: controlClient(() => rig.server.url, options.token),
  };
  lifecycle(options.per, async (closeLater) => {
    const started = await startLocalServer({ env: options.env ?? {}, ...(options.token !== undefined ? { token: options.token } : {}) });
    server = started;
    closeLater(async () => {
      server = undefined;
      await started.close();
    });
    await registerNodes(rig.api, options.nodes ?? []);
    await options.prepare?.(rig.api);
  });
  return rig;
}
