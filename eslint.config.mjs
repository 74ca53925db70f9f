import tseslint from 'typescript-eslint';
import jest from 'eslint-plugin-jest';
import comments from '@eslint-community/eslint-plugin-eslint-comments/configs';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.serverless/**', '.esbuild/**', '.jest-cache/**', 'coverage/**', 'bin/**', 'scripts/**', '*.js', '*.mjs'] },
  ...tseslint.configs.recommended,
  comments.recommended,
  {
    rules: {
      // "No any without a reason": an eslint-disable comment must say why.
      '@typescript-eslint/no-explicit-any': 'error',
      '@eslint-community/eslint-comments/require-description': ['error', { ignore: [] }],
      '@eslint-community/eslint-comments/no-unused-disable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/ban-ts-comment': 'error',
    },
  },
  {
    files: ['test/**/*.ts'],
    ...jest.configs['flat/recommended'],
    rules: {
      ...jest.configs['flat/recommended'].rules,
      'jest/no-focused-tests': 'error',
      'jest/no-disabled-tests': 'error',
      'jest/expect-expect': ['error', { assertFunctionNames: ['expect', 'expect*', 'assert*'] }],
    },
  },
);
