// Checking a skill's npm dependency specs and lockfile against what npm would fetch.
import { describe, expect, it } from 'vitest';
import { checkLockfile, checkNpmSpec, NpmSpecError } from './npm-dependencies.ts';

describe('checkNpmSpec', () => {
  it.each([
    ['lodash', '^4.17.21'],
    ['lodash', '4.17.21'],
    ['lodash', '>=1.2.3 <2 || 3.x'],
    ['lodash', '1.0.0 - 2.0.0'],
    ['lodash', '*'],
    ['lodash', ''],
    ['lodash', 'latest'],
    ['@scope/pkg', '~1.2.0-beta.1'],
    ['JSONStream', '1.3.5'],
    ['my-lodash', 'npm:lodash@^4'],
    ['my-pkg', 'npm:@scope/pkg@1.0.0'],
    ['my-pkg', 'npm:lodash'],
  ])('accepts %s: %j', (name, spec) => {
    expect(checkNpmSpec(name, spec)).toBe(spec);
  });

  it.each([
    ['x', 'https://evil.example/x.tgz'],
    ['x', 'http://evil.example/x'],
    ['x', 'git+https://evil.example/x.git'],
    ['x', 'git+ssh://git@evil.example/x.git'],
    ['x', 'git://evil.example/x.git'],
    ['x', 'git@github.com:evil/x.git'],
    ['x', 'github:evil/x'],
    ['x', 'gitlab:evil/x'],
    ['x', 'bitbucket:evil/x'],
    ['x', 'gist:abc'],
    ['x', 'evil/x'],
    ['x', 'evil/x#main'],
    ['x', 'file:../x'],
    ['x', 'file:/etc'],
    ['x', './x'],
    ['x', '../x'],
    ['x', '.'],
    ['x', '/abs/x'],
    ['x', '~/x'],
    ['x', 'C:\\x'],
    ['x', 'x.tgz'],
    ['x', 'x.tar.gz'],
    ['x', 'x.tar'],
    ['x', 'link:../x'],
    ['x', 'workspace:*'],
    ['x', 'npm:x@https://evil.example/x.tgz'],
    ['x', 'npm:x@github:evil/x'],
    ['x', 'npm:../x'],
    ['x', 'npm:y@npm:z@1'],
    ['../x', '1.0.0'],
    ['', '1.0.0'],
  ])('refuses %s: %j', (name, spec) => {
    expect(() => checkNpmSpec(name, spec)).toThrow(NpmSpecError);
  });
});

const REGISTRY = 'http://127.0.0.1:4873/';

describe('checkLockfile', () => {
  const v3 = (entry: Record<string, unknown>, path = 'node_modules/x') =>
    JSON.stringify({
      lockfileVersion: 3,
      packages: { '': { dependencies: { x: '^1' } }, [path]: entry },
    });

  it('accepts tarballs on the configured registry or registry.npmjs.org', () => {
    expect(() =>
      checkLockfile(
        v3({ version: '1.0.0', resolved: 'http://127.0.0.1:4873/x/-/x-1.0.0.tgz' }),
        REGISTRY,
      ),
    ).not.toThrow();
    expect(() =>
      checkLockfile(
        v3(
          {
            version: '1.0.0',
            resolved: 'https://registry.npmjs.org/@s/y/-/y-1.0.0.tgz',
            dependencies: { z: '^2' },
          },
          'node_modules/x/node_modules/@s/y',
        ),
        REGISTRY,
      ),
    ).not.toThrow();
    expect(() =>
      checkLockfile(
        JSON.stringify({
          lockfileVersion: 1,
          dependencies: {
            x: {
              version: '1.0.0',
              resolved: 'https://registry.npmjs.org/x/-/x-1.0.0.tgz',
              requires: { y: '^1' },
              dependencies: { y: { version: '1.2.0' } },
            },
          },
        }),
        REGISTRY,
      ),
    ).not.toThrow();
  });

  it.each([
    [v3({ version: '1.0.0', resolved: 'https://evil.example/x/-/x-1.0.0.tgz' }), /resolved/],
    [v3({ version: '1.0.0', resolved: 'http://registry.npmjs.org/x/-/x-1.0.0.tgz' }), /resolved/],
    [v3({ version: '1.0.0', resolved: 'git+ssh://git@github.com/evil/x.git#abc' }), /resolved/],
    [v3({ version: '1.0.0', resolved: 'file:../x' }), /resolved/],
    [v3({ resolved: '../x', link: true }), /linked/],
    [v3({ version: '1.0.0' }, 'packages/x'), /local folder/],
    [v3({ version: '1.0.0', dependencies: { y: 'https://evil.example/y.tgz' } }), /registry/],
    [v3({ version: '1.0.0', peerDependencies: { y: 'github:evil/y' } }), /registry/],
    [
      JSON.stringify({
        lockfileVersion: 1,
        dependencies: { x: { version: 'git+https://evil.example/x.git#abc' } },
      }),
      /not a registry version/,
    ],
    [
      JSON.stringify({
        lockfileVersion: 1,
        dependencies: {
          x: {
            version: '1.0.0',
            dependencies: { y: { version: '1.0.0', resolved: 'https://evil.example/y.tgz' } },
          },
        },
      }),
      /dependencies > x > y: resolved/,
    ],
    ['{', /not valid JSON/],
  ])('refuses a lockfile that fetches elsewhere (%#)', (text, message) => {
    expect(() => checkLockfile(text, REGISTRY)).toThrow(message);
  });
});
