/**
 * Runs `osls package` the way `npm run package` does (offline, no AWS credentials) and reads the
 * generated CloudFormation template, for tests that check what would be deployed.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { z } from 'zod';

const resourceSchema = z.object({
  Type: z.string(),
  Properties: z.record(z.string(), z.unknown()).optional(),
  DependsOn: z.union([z.string(), z.array(z.string())]).optional(),
});

const templateSchema = z.object({
  Resources: z.record(z.string(), resourceSchema),
  Outputs: z.record(z.string(), z.unknown()).optional(),
  Conditions: z.record(z.string(), z.unknown()).optional(),
});

export type CfnResource = z.infer<typeof resourceSchema>;
export type CfnTemplate = z.infer<typeof templateSchema>;

export class ServerlessPackageError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ServerlessPackageError';
  }
}

export interface PackageOptions {
  /** Directory holding serverless.yml. */
  readonly serviceDir: string;
  readonly stage: string;
  readonly region: string;
  /** `--param="key=value"` overrides. */
  readonly params?: Readonly<Record<string, string>>;
}

export interface PackagedService {
  readonly template: CfnTemplate;
  /** What the packaging printed (stdout and stderr), where a warning about the runtime would show. */
  readonly output: string;
  /** Removes the package output and serverless's scratch files. */
  readonly cleanup: () => void;
}

/**
 * The child's environment: nothing from the caller that could change the result (AWS credentials or profiles,
 * HAMi or Powertools settings that `${env:...}` defaults read).
 */
function packagingEnvironment(scratchDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(AWS_|HAMI_|POWERTOOLS_)/.test(key)) continue;
    env[key] = value;
  }
  // osls leaves `<function>-<pid>-…` directories in the temp folder; keep them in ours.
  env.TMPDIR = scratchDir;
  return env;
}

/** What `osls package` reads from the service directory (serverless.yml, handlers, their code, configs). */
const SERVICE_ENTRIES = ['serverless.yml', 'package.json', 'tsconfig.json', 'functions', 'lib', 'infra', 'types'] as const;

/**
 * A private copy of the service to package from. osls and serverless-esbuild write scratch directories
 * (`.serverless/`, `.esbuild/`) into the service directory and delete them when done; two packagings of one
 * checkout at the same time (a second `npm test` beside this one) would pull them from under each other.
 */
function stageService(serviceDir: string, into: string): string {
  const staged = path.join(into, 'service');
  mkdirSync(staged);
  for (const entry of SERVICE_ENTRIES) {
    const from = path.join(serviceDir, entry);
    if (existsSync(from)) cpSync(from, path.join(staged, entry), { recursive: true });
  }
  symlinkSync(path.join(serviceDir, 'node_modules'), path.join(staged, 'node_modules'), 'dir');
  return staged;
}

export async function packageService(options: PackageOptions): Promise<PackagedService> {
  const workDir = mkdtempSync(path.join(tmpdir(), 'hami-sls-package-'));
  const cleanup = (): void => rmSync(workDir, { recursive: true, force: true });
  const outDir = path.join(workDir, 'out');
  const scratchDir = path.join(workDir, 'tmp');
  mkdirSync(scratchDir);
  const serviceDir = stageService(options.serviceDir, workDir);
  const cli = path.join(serviceDir, 'node_modules', 'osls', 'bin', 'serverless.js');
  const args = [cli, 'package', '--package', outDir, '--stage', options.stage, '--region', options.region];
  for (const [key, value] of Object.entries(options.params ?? {})) args.push(`--param=${key}=${value}`);
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, args, {
      cwd: serviceDir,
      env: packagingEnvironment(scratchDir),
      maxBuffer: 16 * 1024 * 1024,
    });
    const raw: unknown = JSON.parse(readFileSync(path.join(outDir, 'cloudformation-template-update-stack.json'), 'utf8'));
    return { template: templateSchema.parse(raw), output: `${stdout}${stderr}`, cleanup };
  } catch (error) {
    cleanup();
    // execFile's error carries the child's output; osls prints the reason there, not in `message`.
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new ServerlessPackageError(`osls package failed in ${options.serviceDir}\n${stdout}${stderr}`, {
      cause: error,
    });
  }
}

/** The resources of one CloudFormation type, by logical id. */
export function resourcesOfType(template: CfnTemplate, type: string): Map<string, CfnResource> {
  return new Map(Object.entries(template.Resources).filter(([, resource]) => resource.Type === type));
}
