/**
 * The Reflect metadata tsyringe needs under @peculiar/x509: installed when missing, left alone when a real
 * polyfill is there, and enough for tsyringe's decorators and for @peculiar/x509 to load.
 */
import type { MetadataReflect } from '../../../lib/relay/tls/reflectMetadata';

const reflect = Reflect as typeof Reflect & MetadataReflect;

/** Runs the module afresh (it acts once, when loaded). */
async function loadShim(): Promise<void> {
  await jest.isolateModulesAsync(async () => {
    await import('../../../lib/relay/tls/reflectMetadata');
  });
}

afterEach(() => {
  delete reflect.defineMetadata;
  delete reflect.getOwnMetadata;
  delete reflect.getMetadata;
});

describe('relay TLS: Reflect metadata for tsyringe', () => {
  it('stores metadata per target and property; getMetadata also reads the prototype chain, getOwnMetadata does not', async () => {
    await loadShim();
    class Parent {}
    class Child extends Parent {}

    reflect.defineMetadata!('token', 'parent', Parent);
    reflect.defineMetadata!('token', 'method', Parent, 'run');

    expect(reflect.getOwnMetadata!('token', Parent)).toBe('parent');
    expect(reflect.getOwnMetadata!('token', Parent, 'run')).toBe('method');
    expect(reflect.getOwnMetadata!('token', Child)).toBeUndefined();
    expect(reflect.getMetadata!('token', Child)).toBe('parent');
    expect(reflect.getMetadata!('other', Child)).toBeUndefined();
    reflect.defineMetadata!('token', 'child', Child);
    expect(reflect.getMetadata!('token', Child)).toBe('child');
    expect(reflect.getMetadata!('token', Parent)).toBe('parent');
  });

  it('leaves a polyfill that is already there alone', async () => {
    const theirs = () => 'theirs';
    reflect.getMetadata = theirs;

    await loadShim();

    expect(reflect.getMetadata).toBe(theirs);
    expect(reflect.defineMetadata).toBeUndefined();
  });

  it('lets @peculiar/x509 (tsyringe) load, which it refuses without it', async () => {
    await expect(jest.isolateModulesAsync(async () => void (await import('@peculiar/x509')))).rejects.toThrow(/tsyringe requires a reflect polyfill/);

    await loadShim();

    await jest.isolateModulesAsync(async () => {
      const x509 = await import('@peculiar/x509');
      expect(new x509.BasicConstraintsExtension(true, 0, true).ca).toBe(true);
    });
  });
});
