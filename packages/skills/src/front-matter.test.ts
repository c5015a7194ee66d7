import { describe, expect, it } from 'vitest';
import { MAX_SKILL_MD_BYTES } from './limits.ts';
import { parseSkillMd } from './front-matter.ts';
import { inspectSkillZip } from './package.ts';
import { buildZip, codeFor, skillMd, withSkillMd } from './zip-fixtures.ts';

describe('SKILL.md front matter', () => {
  it('skill_md_too_large', async () => {
    const md = skillMd('demo-skill') + 'x'.repeat(MAX_SKILL_MD_BYTES);
    expect(await codeFor(withSkillMd(md))).toBe('skill_md_too_large');
  });

  it.each([
    ['no front matter', '# demo-skill\n\nname: demo-skill\n'],
    ['an unclosed front matter', '---\nname: demo-skill\ndescription: x\n'],
    ['invalid YAML', '---\nname: [demo-skill\ndescription: x\n---\n'],
    ['a duplicate key', '---\nname: demo-skill\nname: demo-skill\ndescription: x\n---\n'],
    ['a list instead of a mapping', '---\n- name\n- description\n---\n'],
    ['a scalar', '---\njust text\n---\n'],
  ])('invalid_front_matter: %s', async (_case, md) => {
    expect(await codeFor(withSkillMd(md))).toBe('invalid_front_matter');
  });

  it('invalid_front_matter: not UTF-8', async () => {
    const md = Buffer.concat([Buffer.from(skillMd('demo-skill')), Buffer.from([0xff, 0xfe])]);
    expect(await codeFor([{ name: 'demo-skill/SKILL.md', data: md }])).toBe('invalid_front_matter');
  });

  it('name_mismatch', async () => {
    expect(await codeFor(withSkillMd(skillMd('other-name')))).toBe('name_mismatch');
    expect(await codeFor(withSkillMd('---\ndescription: no name\n---\n'))).toBe('name_mismatch');
    expect(await codeFor(withSkillMd('---\nname: 42\ndescription: x\n---\n'))).toBe(
      'name_mismatch',
    );
  });

  it('invalid_name', async () => {
    expect(await codeFor(withSkillMd(skillMd('bad.name'), 'bad.name'))).toBe('invalid_name');
    const long = 'x'.repeat(65);
    expect(await codeFor(withSkillMd(skillMd(long), long))).toBe('invalid_name');
  });

  it.each([
    ['missing', '---\nname: demo-skill\n---\n'],
    ['empty', "---\nname: demo-skill\ndescription: '  '\n---\n"],
    ['not a string', '---\nname: demo-skill\ndescription: [a]\n---\n'],
    ['over 1024 characters', skillMd('demo-skill', 'd'.repeat(1025))],
  ])('invalid_description: %s', async (_case, md) => {
    expect(await codeFor(withSkillMd(md))).toBe('invalid_description');
  });
  it('keeps a description of exactly 1024 characters and CRLF front matter', async () => {
    const md = skillMd('demo-skill', 'd'.repeat(1024)).replaceAll('\n', '\r\n');
    const pkg = await inspectSkillZip(await buildZip(withSkillMd(md)));
    expect(pkg.description).toHaveLength(1024);
  });

  it('keeps a __proto__ key as data, never as a prototype', () => {
    const { frontMatter } = parseSkillMd(
      '---\nname: demo-skill\ndescription: x\n__proto__:\n  polluted: true\n---\n',
      'demo-skill',
    );
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.getPrototypeOf(frontMatter)).toBe(Object.prototype);
    expect((frontMatter as { polluted?: unknown }).polluted).toBeUndefined();
  });
});
