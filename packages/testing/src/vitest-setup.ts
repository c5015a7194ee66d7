// Runs before every test file (vitest `setupFiles`): a test during which a test NATS server
// logged a permission violation fails, naming the subject and the user, so a route or service
// that asks for what its user may not have is caught by every test that touches it. Imports the
// violation log only (not the package's front door): this runs for unit tests too.
import { afterAll, afterEach, beforeEach, expect } from 'vitest';
import { describeViolations, resetAllowedViolations, takeViolations } from './violations.ts';

// The server writes its log line as it refuses; the line reaches us through a pipe a moment
// later, so give it one turn of the event loop's I/O before judging the test.
const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

beforeEach(() => {
  resetAllowedViolations();
  takeViolations();
});

afterEach(async () => {
  await settle();
  const seen = takeViolations();
  expect(seen, `NATS permission violations during this test:\n${describeViolations(seen)}`).toEqual(
    [],
  );
});

afterAll(async () => {
  await settle();
  const seen = takeViolations();
  if (seen.length > 0)
    throw new Error(`NATS permission violations after the last test:\n${describeViolations(seen)}`);
});
