"""100 runs of threadtest -t 2 -n 4 in per-core timing (Q = 1 us, causal max), 4 boots of 25."""
import shutil, time
from tandem.platform.boot import BootOptions, run_exec
from tandem.platform.timing import Timing
Q = 1000
for boot in range(1, 5):
    options = BootOptions(timing=Timing("percore", Q, causal="max"), smp=4, phase_us=boot * 100)
    script = ("for i in $(seq 25); do threadtest -t 2 -n 4 >/tmp/t 2>&1 "
              "&& echo @@run ok || { echo @@run failed; cat /tmp/t | tail -20; }; done\n")
    t0 = time.monotonic()
    r = run_exec(options, script, timeout_s=3600, echo=lambda l: print(time.strftime('%H:%M:%S'), l, flush=True) if l.startswith("@@run") else None)
    shutil.copy(r.console_log, f"/tmp/tt100/boot{boot}.console.log")
    v = [l.split()[1] for l in r.lines if l.startswith("@@run")]
    print(f"boot {boot}: status {r.status} runs {len(v)} ok {v.count('ok')} failed {v.count('failed')} host {time.monotonic()-t0:.0f} s", flush=True)
