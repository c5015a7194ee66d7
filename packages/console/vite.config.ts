// The console's build: one HTML page and hashed JS/CSS under dist/, every path relative to
// /console/ (the api's mount point). Nothing is loaded from another origin.
import { defineConfig } from 'vite';

export default defineConfig({
  root: 'web',
  base: '/console/',
  build: { outDir: '../dist', emptyOutDir: true, sourcemap: false, target: 'es2022' },
});
