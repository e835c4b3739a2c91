// The bounded model checker, alone: `npx tsx test/model/check.ts` (add --mutations to show the three
// counterexamples). Prints its bounds, each configuration's state count and time, and what it found.
import { DEFAULT_BOUNDS, PROVIDERS } from './model';
import { explore, printCounterexample, providerNamed, type Result } from './explore';

function line(r: Result): string {
  const safety = r.safety === null ? 'holds' : `BROKEN (${r.safety.why})`;
  const liveness = r.liveness.length === 0 ? 'holds' : `BROKEN (${r.liveness.map((c) => c.why).join('; ')})`;
  const head = `${r.config.provider.padEnd(9)} ${r.config.policy.padEnd(13)}`;
  return `${head} states ${String(r.states).padStart(7)} ${String(r.ms).padStart(6)} ms  safety ${safety}; liveness ${liveness}`;
}

const started = performance.now();
console.log(`bounds: ${JSON.stringify(DEFAULT_BOUNDS)}`);
console.log(
  'actors: two runs of one workflow id (a Reset between them) and a third after a reopen or retry; the sweep ' +
    "(with the second look); an operator (reset, terminate, retry); the case study's writer; the first run's " +
    `worker ${DEFAULT_BOUNDS.skewMinutes} minutes off (no decision reads its clock)`,
);
let total = 0;
for (const provider of PROVIDERS) {
  for (const policy of ['assume-sent', 'assume-failed'] as const) {
    const r = explore({ provider, policy });
    total += r.states;
    console.log(line(r));
    console.log(`  transitions run: ${r.transitions.join(', ')}`);
    for (const c of [r.safety, ...r.liveness]) if (c !== null) console.log(printCounterexample(c));
  }
}
if (process.argv.includes('--mutations')) {
  const mutations = [
    ["(a) the trigger's old session-setting rule", { sessionSettingTrigger: true }, 'generic', 'assume-sent'],
    [
      '(b) "not found" counted without a witness',
      { notFoundWithoutWitness: true },
      'postmark',
      'assume-sent',
    ],
    ['(c) an outage under assume-sent, no second look', { noSecondLook: true }, 'mailgun', 'assume-sent'],
  ] as const;
  for (const [name, m, provider, policy] of mutations) {
    const r = explore({ provider: providerNamed(provider), policy, mutations: m });
    total += r.states;
    console.log(`\nmutation ${name}: ${line(r)}`);
    for (const c of [r.safety, ...r.liveness]) if (c !== null) console.log(printCounterexample(c));
  }
}
console.log(`\n${total} states in ${Math.round(performance.now() - started)} ms`);
