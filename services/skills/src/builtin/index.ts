import { echoTool } from './echo.ts';
import { sleepTool } from './sleep.ts';

/** The diagnostic tools, served under target `builtin`. */
export const builtinTools = [echoTool, sleepTool] as const;
export const BUILTIN_TARGET = 'builtin';
