import { defaultEngineConfig } from '../../lib/engine/types';

describe('engine defaults', () => {
  it('follow HAMi: binpack nodes, spread cards', () => {
    expect(defaultEngineConfig.nodeSchedulerPolicy).toBe('binpack');
    expect(defaultEngineConfig.gpuSchedulerPolicy).toBe('spread');
  });
});
