// Project settings patches: a value sets a key, null removes it, and an emptied section goes.
import { expect, it } from 'vitest';
import { mergeSettings } from './projects.ts';

it('sets, keeps and removes keys of the settings', () => {
  expect(mergeSettings({}, { tools: { pin_definitions: false } })).toEqual({
    tools: { pin_definitions: false },
  });
  const set = { tools: { pin_definitions: false } };
  expect(mergeSettings(set, {})).toEqual(set);
  expect(mergeSettings(set, { tools: {} })).toEqual(set);
  expect(mergeSettings(set, { tools: { pin_definitions: undefined } })).toEqual(set);
  expect(mergeSettings(set, { tools: { pin_definitions: true } })).toEqual({
    tools: { pin_definitions: true },
  });
  expect(mergeSettings(set, { tools: { pin_definitions: null } })).toEqual({});
  // The input is not changed in place.
  expect(set).toEqual({ tools: { pin_definitions: false } });
});
