// The product's workflows bundled with the search-attribute module replaced by one that upserts nothing
// (BENCH_SKIP_SEARCH_ATTRIBUTES): the same code otherwise, the same commands but the upserts.
import path from 'node:path';
import { writeFile } from 'node:fs/promises';
import { bundleWorkflowCode } from '@temporalio/worker';
import webpack from 'webpack';

export async function bundleWithoutUpserts(outputPath: string): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: path.join(__dirname, '../../../src/workflows/index.ts'),
    webpackConfigHook: (config) => ({
      ...config,
      plugins: [
        ...(config.plugins ?? []),
        new webpack.NormalModuleReplacementPlugin(
          /[\\/]showOrderMailState$/,
          path.join(__dirname, 'showNothing.ts'),
        ),
      ],
    }),
  });
  await writeFile(outputPath, code);
  return outputPath;
}
