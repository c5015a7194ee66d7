// The sandbox folder of the test run (set once by the tests' global setup, where the sandbox uid
// can reach it): the environment the test api and meshes give every service they start.

/** `CG__SANDBOX__ROOT_DIR` of this run, or nothing (the configured `sandbox.root_dir`). */
export function sandboxRootEnv(): Record<string, string> {
  const dir = process.env['CG__SANDBOX__ROOT_DIR'];
  return dir ? { CG__SANDBOX__ROOT_DIR: dir } : {};
}
