/**
 * The relay image definition (no Docker engine here, so its content is checked): multi-stage, a small
 * non-root final stage that receives only the standalone bundle, and the entry point the chart runs.
 * test/integration/relay/bundle.test.ts proves that bundle runs alone.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, find, renderChart } from '../../support/chart';

const lines = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));
const stages: string[][] = [];
for (const line of lines) {
  if (/^FROM\s/i.test(line)) stages.push([line]);
  else stages[stages.length - 1]?.push(line);
}
const final = stages[stages.length - 1] ?? [];
const instruction = (stage: string[], name: string) => stage.filter((l) => l.toUpperCase().startsWith(`${name} `));

describe('Dockerfile', () => {
  it('builds in one stage and ships from another', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(stages[0]?.[0]).toMatch(/^FROM node:24[\w.-]*-slim AS build$/);
    expect(stages[0]).toContain('RUN node scripts/build.mjs relay');
  });

  it('ships from a small base without a shell or package manager, as a non-root user', () => {
    expect(final[0]).toMatch(/^FROM gcr\.io\/distroless\/nodejs24-debian12:nonroot$/);
    expect(instruction(final, 'USER')).toEqual(['USER 65532:65532']);
  });

  it('copies only the standalone relay bundle into the final image', () => {
    expect(instruction(final, 'COPY')).toEqual(['COPY --from=build /src/dist/relay.js /app/dist/relay.js']);
    expect(instruction(final, 'ADD')).toEqual([]);
    expect(instruction(final, 'RUN')).toEqual([]);
  });

  it('has the entry point the chart runs, as the user the chart runs it as', () => {
    const objects = renderChart();
    const spec = (find(objects, 'Deployment', 'hami-relay').spec as { template: { spec: { securityContext: { runAsUser: number }; containers: { command: string[]; securityContext: { readOnlyRootFilesystem: boolean } }[] } } }).template.spec;
    const entrypoint = JSON.parse(instruction(final, 'ENTRYPOINT')[0]?.slice('ENTRYPOINT '.length) ?? '[]') as string[];
    expect(entrypoint).toEqual(spec.containers[0]?.command);
    expect(spec.securityContext.runAsUser).toBe(65532);
    expect(spec.containers[0]?.securityContext.readOnlyRootFilesystem).toBe(true);
  });
});
