// The runner's --help: every flag of `npm run demo` and `npm run chaos`.
import { SLOW_MS } from './profiles';
import { VERIFICATION_USAGE } from './verificationOptions';

export const USAGE = `Usage: npm run demo -- [flags]     (the demo profile)
       npm run chaos -- [flags]    (the chaos profile: every fault at full strength)

  --profile demo|chaos          start from this profile (set by the npm scripts)
  --transport http|smtp         send through the HTTP Mail API sandbox (default) or over SMTP to the SMTP
                                fault sandbox; the fault flags below then mean the SMTP faults in [brackets]
  --inbox / --no-inbox          start MailDev and relay every accepted mail to it (demo on, chaos off)
  --orders N                    orders to create and send (demo 200, chaos 2000)
  --workers N                   worker processes (demo 3, chaos 4)
  --clients N                   client processes; each starts every order once (3)
  --start-rate N                starts per second of each client, 0 = unpaced (demo 0, chaos 5)
  --worker-concurrency N        activities one worker runs at once (demo 100, chaos 20)
  --policy assume-sent|assume-failed   UNKNOWN_OUTCOME_POLICY of the workers (assume-sent)
  --accept-then-drop RATE       share of requests accepted, then the connection closed unanswered
                                [message kept, socket closed before the 250 after the final '.']
  --hang RATE                   accepted, answered only after the client gave up  [250 held back 10 s]
  --5xx RATE                    500 (not processed) or 502 (processed), half each  [451 after the data]
  --429 RATE                    429 with Retry-After: 1  [451 at RCPT, greylisting]
  --503 RATE                    503  [421 greeting]
  --drop RATE                   connection closed before anything was processed  [closed before DATA]
  --slow RATE                   accepted and answered after ${SLOW_MS} ms, inside the client's deadline: no fault,
                                a send in flight for a while  [250 after ${SLOW_MS} ms] (0; 25% with --operators)
  --no-faults                   all of the rates above 0
${VERIFICATION_USAGE}
  --refuse-every S / --refuse-for S   refuse connections for a while, periodically (0 = off)
  --kill-every S                SIGKILL a random worker every S seconds and start another (0 = off)
  --restart-postgres AT         restart Postgres once AT (0..1) of the orders are done ('off' = never)
  --restart-temporal AT         restart the Temporal dev server (with its db file) likewise; with --cluster,
                                every host of the cluster at once
  --cluster                     cluster chaos: the Temporal server as a cluster of processes on the run's
                                Postgres (two frontends behind one address, two history hosts on 16 shards,
                                two matching hosts, the worker service; needs the stack's tools, setup.sh
                                --stack) and, while orders flow, at random moments: a history host SIGKILLed
                                and started again, a matching host likewise, a frontend restarted, a rolling
                                restart of every host. The report counts each act and the workflow and
                                activity tasks the server redelivered (3 workers unless --workers)
  --cluster-every S             mean pause between two acts on the cluster (15; 0 = the cluster, no acts)
  --cluster-down-for S          how long a killed host stays down, at most (10)
  --operators                   operator chaos: while orders flow, an operator acts on random in-flight orders
                                through the real Temporal API and temporal CLI and through npm run ops: workflow
                                cancel, terminate, reset to the first and to the last workflow task; pause,
                                unpause, reset and update-options (more attempts) of the send activity; ops
                                retry and ops resolve, and resolve-as-failed-then-retry re-sends. Every paused
                                send is unpaused. Ends with a reconciliation sweep; the report counts every act
  --operator-every S            mean pause between two operator acts (0.25)
  --sweep-every S               run the reconciliation sweep's Schedule every S seconds during the run
                                (0 = no Schedule; 15 with --operators)
  --failover                    failover chaos: MAIL_PROVIDERS=postmark,mailgun, each its own sandbox, both verified
                                by lookup; accept-then-drop on both throughout (--accept-then-drop, 0.1) and, mid-run,
                                postmark down for a window (refused, then 503, then accept-then-drop, a third each).
                                No other faults, kills or restarts unless flags ask. The report counts per provider
                                the mails it received and the attempts that failed over, and why (3 workers)
  --outage-at S / --outage-for S   when the primary goes down after the first start, and for how long (10 / 60)
  --provider-change             provider-change chaos: the --failover pair (postmark, mailgun) without its outage,
                                under accept-then-drop 0.1, 5xx 0.04, 503 0.03, drop 0.02, orders started at 1/s per
                                client; at --drain-at postmark is drained (MAIL_PROVIDERS_DRAINING, a rolling
                                restart); from --rotate-key-at mailgun's key is rotated as docs/operating.md says
                                (drained under its old key, new key beside the old at the sandbox, workers rolled to
                                it, old key revoked, mailgun back). The report lists the customers without a mail
                                through npm run ops -- list --state failed and checks that listing (3 workers)
  --drain-at S / --rotate-key-at S   when the drain and the key rotation start after the first start (20 / 50)
  --hold-at S / --hold-for S    S seconds after the first start, hold every send (npm run ops -- hold) for
                                --hold-for seconds (120), then resume; the report holds the requests the
                                sandbox received from hold's return to resume to 0 (lookups counted apart)
  --upgrade-at S / --upgrade-every S   a rollout under the faults: unversioned workers (2.0's way) run the orders;
                                the workers of builds N and N+1 (one more command in the mail workflow) start
                                beside them before the first order. At S (or once N polls) N becomes current; once
                                2.0's runs drained and --upgrade-every seconds (30) on, N+1 ramps at 50%; a period
                                later N+1 is current; a period later back to N. Every switch waits until its build is seen polling (a worker says so and
                                describe-version lists the task queue); every build's workers run to the end and
                                are killed now and then. The report counts runs per build, open runs at each
                                switch, the builds' start times, non-determinism failures.
                                The load is shaped (dev/demo/upgradeLoad.ts) unless fault flags, --worker-concurrency
                                or --settle-delay say otherwise: slow answers held half a period, a settle delay and
                                a not-sent backoff of a period, 20 activity slots per worker, and (unless
                                --start-rate) one client whose start rate follows the switches
  --upgrade-plain-load          the chaos profile's own load for the rollout, not the shaped one: its faults,
                                slots, deadlines and settle delay (--upgrade-min-per-state then defaults to 0)
  --upgrade-min-per-state N     the least open runs of the build being left in each of claimed, mid-send, settle
                                delay and not-sent backoff at every switch (50 from 1,000 orders, else 0)
  --send-outage S               outage chaos: once every order has started, every send is dropped before the
                                provider for S seconds (the connection dies after the request is written; nothing
                                is recorded), then healthy; lookups keep answering. No other faults, kills or
                                restarts unless flags ask; the product's settle delay (generic 30 s; postmark and
                                mailgun 30 s too, overridden: theirs would make a run of 10 min / over an hour) and
                                deadline. The report counts the witness probes and, per provider, how long after the
                                outage each pending unknown was answered found / not found, and the last mail (3 workers)
  --seed N                      seed of the sandbox's fault draws and of the operator's choices
  --timeout S                   give up waiting after S seconds (the report then shows what is missing)
  --keep                        leave everything running after the report, until Ctrl-C
  --json                        print the report as JSON on stdout (everything else goes to stderr)
  -h, --help

Environment: DATABASE_URL and TEMPORAL_ADDRESS (+ TEMPORAL_NAMESPACE) use servers you already run instead
of starting embedded Postgres and a Temporal dev server; their restarts are then skipped.`;
