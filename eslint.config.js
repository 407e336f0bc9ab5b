import js from "@eslint/js";
import tseslint from "typescript-eslint";
import pluginVue from "eslint-plugin-vue";
import globals from "globals";

export default tseslint.config(
  {
    ignores: [
      "**/node_modules/**",
      "**/dist/**",
      "release/**",
      "control-plane/src/generated/**",
      "console/src/graphql/generated/**",
      "data/**",
      "bench/results/**",
      "test/browser/screenshots/**",
      "scratch/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-console": "off",
    },
  },
  // The console: Vue single-file components (TypeScript in <script setup>), run in the browser.
  ...pluginVue.configs["flat/essential"].map((c) => ({ ...c, files: ["console/**/*.{js,ts,vue}"] })),
  {
    files: ["console/**/*.{js,ts,vue}"],
    languageOptions: {
      globals: { ...globals.browser },
      parserOptions: { parser: tseslint.parser, extraFileExtensions: [".vue"], sourceType: "module" },
    },
  },
);
