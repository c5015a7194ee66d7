// Reading a skill's dependencies from its own files.
import { describe, expect, it } from 'vitest';
import { dependencyKinds, skillDependencies } from './dependencies.ts';

const file = (path: string, text: string) => ({ path, data: Buffer.from(text) });

describe('skillDependencies', () => {
  it('reads requirements.txt (comments dropped) and pyproject [project].dependencies', () => {
    const deps = skillDependencies([
      file('requirements.txt', '# pinned\nimageio>=2.31  # for v3\n\npillow\n'),
      file('pyproject.toml', '[project]\nname = "x"\ndependencies = ["numpy>=1.26"]\n'),
    ]);
    expect(deps.python).toEqual({
      requirements: 'imageio>=2.31\npillow\nnumpy>=1.26\n',
      sources: ['requirements.txt', 'pyproject.toml'],
    });
    expect(dependencyKinds(deps)).toEqual(['python']);
  });

  it('reads package.json dependencies but not devDependencies', () => {
    const deps = skillDependencies([
      file(
        'package.json',
        JSON.stringify({ name: 's', dependencies: { a: '^1' }, devDependencies: { b: '2' } }),
      ),
    ]);
    expect(JSON.parse(deps.node!.packageJson)).toEqual({
      name: 'skill-env',
      private: true,
      dependencies: { a: '^1' },
    });
    expect(dependencyKinds(deps)).toEqual(['node']);
  });

  it('has nothing to install for a skill without dependencies, or with empty files', () => {
    expect(skillDependencies([file('SKILL.md', '# x')])).toEqual({});
    expect(
      skillDependencies([
        file('requirements.txt', '# nothing\n'),
        file('package.json', '{"name":"x","devDependencies":{"b":"1"}}'),
        file('pyproject.toml', '[tool.black]\nline-length = 100\n'),
      ]),
    ).toEqual({});
  });

  it.each([
    [
      'requirements.txt',
      'x\n-i https://evil.example/simple\n',
      /requirements.txt line 2 sets a package index \(--index-url\)/,
    ],
    ['requirements.txt', '--find-links /tmp\n', /--find-links/],
    ['requirements.txt', 'x\r--ind=https://evil.example/\n', /line 2 .*--index-url/],
    [
      'pyproject.toml',
      '[project]\ndependencies = ["x\\n-ihttp://evil.example/"]\n',
      /dependencies\[0\]/,
    ],
    ['pyproject.toml', '[project]\ndependencies = ["y", "x --index-url=http://e/"]\n', /\[1\]/],
    ['pyproject.toml', '[project]\ndependencies = ["x @ https://evil.example/x.whl"]\n', /direct/],
    ['package.json', '{"dependencies":{"a":"https://evil.example/a.tgz"}}', /dependency a: /],
    ['package.json', '{"dependencies":{"a":"github:evil/a"}}', /configured registry/],
    ['package.json', '{"dependencies":{"a":"file:../a"}}', /configured registry/],
    ['pyproject.toml', '[project\n', /not valid TOML/],
    ['pyproject.toml', '[project]\ndependencies = "x"\n', /array of strings/],
    ['package.json', '{', /not valid JSON/],
    ['package.json', '{"dependencies":{"a":1}}', /version strings/],
  ])('refuses a bad %s with a clear error (%#)', (name, text, message) => {
    expect(() => skillDependencies([file(name, text)])).toThrow(message);
    try {
      skillDependencies([file(name, text)]);
    } catch (err) {
      expect(err).toMatchObject({ code: 'invalid_dependencies', details: { file: name } });
    }
  });

  it('writes back what it checked, so pip reads no line the skill wrote itself', () => {
    const deps = skillDependencies([
      file('requirements.txt', 'requests \\\n  --hash=sha256:00ff  # pinned\r\n--pre\n'),
    ]);
    expect(deps.python?.requirements).toBe('requests --hash=sha256:00ff\n--pre\n');
  });

  it("refuses a lockfile resolving outside the configured registry, and takes the registry's own", () => {
    const lock = (resolved: string) =>
      file(
        'package-lock.json',
        JSON.stringify({
          lockfileVersion: 3,
          packages: { 'node_modules/a': { version: '1.0.0', resolved } },
        }),
      );
    const pkg = file('package.json', '{"dependencies":{"a":"^1"}}');
    const opts = { npmRegistry: 'https://npm.mirror.example/' };
    expect(() =>
      skillDependencies([pkg, lock('https://evil.example/a/-/a-1.0.0.tgz')], opts),
    ).toThrow(
      expect.objectContaining({
        code: 'invalid_dependencies',
        details: { file: 'package-lock.json' },
      }),
    );
    expect(
      skillDependencies([pkg, lock('https://npm.mirror.example/a/-/a-1.0.0.tgz')], opts).node
        ?.lockfile,
    ).toMatch(/mirror/);
  });
});
