// The bench's "what one order costs" step, against one Temporal server: one product order per path
// (orderPaths.ts) and one order of each floor workflow, each history counted (historyCost.ts). Runs before the
// measured phases, so nothing here overlaps a measurement.
import type { Client } from '@temporalio/client';
import { historyToJson } from '../../devtools/historyJson';
import type { ServerName } from '../options';
import { countHistoryCost, type HistoryCost } from './historyCost';
import { runOrderPaths, type OrderPath, type OrderPathsTarget } from './orderPaths';

export interface CostRow extends HistoryCost {
  server: ServerName;
  /** The product's workflow, or a floor workflow of the same shape with no-op activities. */
  variant: 'product' | 'floor' | 'floor-local';
  path: OrderPath;
  orderId: string;
  problems: string[];
}

const FLOOR_WORKFLOWS = { floor: 'benchFloorRegular', 'floor-local': 'benchFloorLocal' } as const;

export async function measureCostRows(input: {
  server: ServerName;
  product: OrderPathsTarget | null;
  paths: readonly OrderPath[];
  floor: { client: Client; taskQueue: string; workflowIdPrefix: string } | null;
}): Promise<CostRow[]> {
  const rows: CostRow[] = [];
  if (input.floor !== null) {
    const { client, taskQueue, workflowIdPrefix } = input.floor;
    for (const [variant, workflowType] of Object.entries(FLOOR_WORKFLOWS) as [
      'floor' | 'floor-local',
      string,
    ][]) {
      const workflowId = `${workflowIdPrefix}cost-${variant}`;
      const handle = await client.workflow.start(workflowType, {
        workflowId,
        taskQueue,
        args: [workflowId],
      });
      await handle.result();
      const history = historyToJson(await handle.fetchHistory());
      rows.push({
        server: input.server,
        variant,
        path: 'accepted',
        orderId: workflowId,
        problems: [],
        ...countHistoryCost(history),
      });
    }
  }
  if (input.product !== null) {
    for (const run of await runOrderPaths(input.product, input.paths)) {
      rows.push({
        server: input.server,
        variant: 'product',
        path: run.path,
        orderId: run.orderId,
        problems: run.problems,
        ...run.cost,
      });
    }
  }
  return rows;
}
