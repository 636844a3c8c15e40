#!/usr/bin/env python3
"""Run the chart's redis.mode=sentinel scripts on real processes, without Kubernetes.

helm-unittest proves what the chart renders; this proves that what it
renders works. The start scripts of the ConfigMap (redis-node.sh,
redis-sentinel.sh) run as 3 Redis "pods" and 3 Sentinel "pods", each on its
own loopback address and named as in a cluster
(wsps-redis-node-N.wsps-redis-node-headless), inside a private network and
mount namespace whose /etc/hosts holds those names (nothing outside it is
touched). Then, in order:

  install     node 0 is the primary, the others replicate it, quorum OK
  failover x2 the primary SIGKILLed: a replica promoted, a key written
              before is on it; the killed pod restarted joins as a replica
              of the new primary (it asked the Sentinels)
  delete      the primary's pod deleted: its preStop (redis-prestop.sh)
              hands over to a replica before it stops; the new pod, empty,
              joins as a replica; a key written before is kept
  --force     the primary's pod deleted without preStop and back at once,
              empty, under the primary's name: it waits until the Sentinels
              promote a replica instead of emptying them; the key is kept
  sentinel    a Sentinel pod replaced with an empty /data rejoins, watches
              the current primary, the others list it once
  AUTH        nodes and Sentinels refuse commands without the password
  services    a fetcher and a gateway on the chart's own WSPS_REDIS_* settings
              deliver quotes, and again after one more failover

The scripts are run as rendered, except for paths (/data, /etc/redis: the
pod's directory here) and one `bind` per pod (pods share one loopback).

  sentinel-sim.py [--keep]   --keep: leave the pods' directories and logs
                         needs root (unshare), redis-server, redis-cli,
                         $HELM (tools/tools.sh env) and node_modules
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PASSWORD = 'sentinel-sim-password'
MASTER = 'wsps'
NODE, SENTINEL = 'wsps-redis-node', 'wsps-redis-sentinel'


def host(kind, i):
    return f'{kind}-{i}.{kind}-headless'


class Sim:
    def __init__(self, tmp):
        self.tmp = tmp
        out = subprocess.run([os.environ.get('HELM', 'helm'), 'template', 'wsps', os.path.join(ROOT, 'charts', 'wsps'),
                              '--set', 'redis.mode=sentinel', '--set', f'redis.sentinel.masterName={MASTER}',
                              '--set', 'redis.sentinel.downAfterMilliseconds=1000', '--set', 'redis.sentinel.failoverTimeout=3000'],
                             capture_output=True, text=True, check=True).stdout
        docs = [d for d in yaml.safe_load_all(out) if d]
        config = {d['metadata']['name']: d['data'] for d in docs if d['kind'] == 'ConfigMap'}
        self.scripts = config[SENTINEL]
        self.env = {k: v for k, v in config['wsps-gateway'].items() if k.startswith('WSPS_REDIS_') and not k.endswith('_FILE')}
        self.pods = {f'{kind}-{i}': (kind, f'127.0.{1 if kind == NODE else 2}.{i + 1}') for kind in (NODE, SENTINEL) for i in range(3)}
        self.procs = {}

    def network(self):
        hosts = os.path.join(self.tmp, 'hosts')
        with open(hosts, 'w') as f:
            f.write('127.0.0.1 localhost\n' + ''.join(f'{ip} {name}.{kind}-headless\n' for name, (kind, ip) in self.pods.items()))
        subprocess.run(['mount', '--bind', hosts, '/etc/hosts'], check=True)
        subprocess.run(['ip', 'link', 'set', 'lo', 'up'], check=True)

    def start(self, name):
        kind, ip = self.pods[name]
        d = os.path.join(self.tmp, name)
        os.makedirs(os.path.join(d, 'data'), exist_ok=True)
        os.makedirs(os.path.join(d, 'etc'), exist_ok=True)
        with open(os.path.join(d, 'etc', 'redis.conf'), 'w') as f:
            f.write(self.scripts['redis.conf'].replace('bind * -::*', f'bind {ip}').replace('dir /data', f'dir {d}/data'))
        script = self.scripts['redis-node.sh' if kind == NODE else 'redis-sentinel.sh']
        script = script.replace('/etc/redis', f'{d}/etc').replace('/data', f'{d}/data').replace('port 26379\n', f'port 26379\nbind {ip}\n')
        with open(os.path.join(d, 'etc', 'start.sh'), 'w') as f:
            f.write(script)
        env = dict(os.environ, POD_NAME=name, REDIS_PASSWORD=PASSWORD, REDISCLI_AUTH=PASSWORD)
        self.procs[name] = subprocess.Popen(['sh', os.path.join(d, 'etc', 'start.sh')], env=env,
                                            stdout=open(os.path.join(d, 'log'), 'a'), stderr=subprocess.STDOUT)

    def stop(self, name):
        """kubectl delete pod: the preStop hook, then SIGTERM; the pod's /data goes with it."""
        kind, ip = self.pods[name]
        script = self.scripts['redis-prestop.sh'].replace('-h 127.0.0.1', f'-h {ip}')
        env = dict(os.environ, POD_NAME=name, REDISCLI_AUTH=PASSWORD)
        out = subprocess.run(['sh', '-c', script], env=env, capture_output=True, text=True, timeout=30).stdout.strip()
        self.procs[name].terminate()
        self.procs[name].wait()
        shutil.rmtree(os.path.join(self.tmp, name))
        return out

    def kill(self, name, forget=False):
        self.procs[name].kill()  # sh exec'd redis-server: this is redis-server
        self.procs[name].wait()
        if forget:
            shutil.rmtree(os.path.join(self.tmp, name))

    def cli(self, h, port, *args, password=PASSWORD):
        env = dict(os.environ, REDISCLI_AUTH=password) if password else {k: v for k, v in os.environ.items() if k != 'REDISCLI_AUTH'}
        r = subprocess.run(['timeout', '3', 'redis-cli', '--no-auth-warning', '--raw', '-h', h, '-p', str(port), *args],
                           env=env, capture_output=True, text=True)
        return r.stdout.strip()

    def sentinel(self, i, *args):
        return self.cli(host(SENTINEL, i), 26379, 'sentinel', *args)

    def primary(self):
        answers = {self.sentinel(i, 'get-master-addr-by-name', MASTER).split('\n')[0] for i in range(3)}
        return answers.pop() if len(answers) == 1 and '' not in answers else None

    def known_replicas(self, i):
        return self.sentinel(i, 'replicas', MASTER).split('\n').count('master-link-status')

    def synced(self, h):
        return 'master_link_status:up' in self.cli(h, 6379, 'info', 'replication')

    def wait(self, cond, what, timeout=40):
        end = time.time() + timeout
        while time.time() < end:
            v = cond()
            if v:
                return v
            time.sleep(0.2)
        roles = {i: self.cli(host(NODE, i), 6379, 'role').split('\n')[:2] for i in range(3)}
        sys.exit(f'FAIL {what} (after {timeout} s): roles {roles}, Sentinels say {self.primary()}; pod logs in {self.tmp}')

    def ok(self, what):
        print(f'  ok  {what}', flush=True)

    def failover(self, n):
        old = self.primary()
        pod = old.split('.')[0]
        t = time.time()
        self.kill(pod)
        new = self.wait(lambda: (lambda p: p if p and p != old else None)(self.primary()), f'failover {n}: a replica promoted')
        promoted = time.time() - t
        self.wait(lambda: self.cli(new, 6379, 'role').startswith('master'), f'failover {n}: {new} answers as primary')
        return pod, old, new, promoted

    def run(self):
        self.network()
        t = time.time()
        for name in self.pods:
            self.start(name)
        self.wait(lambda: self.primary() == host(NODE, 0), 'install: the Sentinels name node 0')
        self.wait(lambda: all(self.synced(host(NODE, i)) for i in (1, 2)), 'install: nodes 1 and 2 replicate node 0')
        self.wait(lambda: all(self.sentinel(i, 'ckquorum', MASTER).startswith('OK') for i in range(3)), 'install: quorum')
        # A Sentinel learns the replicas from the primary's INFO (every 10 s):
        # a failover before that finds no replica to promote and is retried
        # only after 2 x failover-timeout.
        self.wait(lambda: all(self.known_replicas(i) == 2 for i in range(3)), 'install: every Sentinel knows both replicas')
        self.ok(f'install: node 0 primary, nodes 1 and 2 in sync, quorum OK, replicas known to every Sentinel ({time.time() - t:.1f} s)')
        for n in (1, 2):
            key = f'k{n}'
            self.cli(self.primary(), 6379, 'set', key, 'v')
            self.wait(lambda: all(self.cli(host(NODE, i), 6379, 'get', key) == 'v' for i in range(3) if self.procs[f'{NODE}-{i}'].poll() is None), f'{key} replicated')
            pod, old, new, promoted = self.failover(n)
            self.ok(f'failover {n}: {pod} SIGKILLed, {new.split(".")[0]} promoted after {promoted:.1f} s, {key} on it: {self.cli(new, 6379, "get", key) == "v"}')
            self.start(pod)
            self.wait(lambda: self.cli(old, 6379, 'role').split('\n')[:2] == ['slave', new] and self.synced(old), f'failover {n}: {pod} rejoins as a replica of {new}')
            self.wait(lambda: all(self.known_replicas(i) == 2 for i in range(3)), f'failover {n}: every Sentinel knows both replicas again')
            self.ok(f'failover {n}: {pod} restarted, asked the Sentinels, replicates {new.split(".")[0]}')
        self.deletes()
        self.kill(f'{SENTINEL}-1', forget=True)
        self.start(f'{SENTINEL}-1')
        self.wait(lambda: self.sentinel(1, 'get-master-addr-by-name', MASTER).split('\n')[0] == self.primary()
                  and self.sentinel(1, 'ckquorum', MASTER).startswith('OK'), 'a replaced Sentinel rejoins')
        self.wait(lambda: self.sentinel(0, 'sentinels', MASTER).split('\n').count('runid') == 2, 'its peers list it once')
        self.ok('sentinel: sentinel-1 replaced with an empty /data rejoins, watches the primary, listed once by its peers')
        noauth = [self.cli(host(SENTINEL, 0), 26379, 'ping', password=''), self.cli(self.primary(), 6379, 'ping', password='')]
        if not all(a.startswith('NOAUTH') for a in noauth):
            sys.exit(f'FAIL AUTH: without the password {noauth}')
        self.ok('AUTH: a Sentinel and the primary answer NOAUTH without the password')
        self.services()

    def replicated(self, key):
        self.cli(self.primary(), 6379, 'set', key, 'v')
        self.wait(lambda: all(self.cli(host(NODE, i), 6379, 'get', key) == 'v' for i in range(3)), f'{key} replicated')

    def rejoined(self, pod, old, new, what):
        self.wait(lambda: self.cli(old, 6379, 'role').split('\n')[:2] == ['slave', new] and self.synced(old), f'{what}: {pod} rejoins as a replica of {new}')
        self.wait(lambda: all(self.known_replicas(i) == 2 for i in range(3)), f'{what}: every Sentinel knows both replicas again')

    def deletes(self):
        self.replicated('k3')
        old = self.primary()
        pod = old.split('.')[0]
        t = time.time()
        said = self.stop(pod)
        new = self.primary()
        if not new or new == old:
            sys.exit(f'FAIL delete: after the preStop the Sentinels name {new} (preStop said: {said})')
        handover = time.time() - t
        self.start(pod)
        self.rejoined(pod, old, new, 'delete')
        self.ok(f'delete: {pod}\'s preStop handed over to {new.split(".")[0]} in {handover:.1f} s ("{said.splitlines()[-1] if said else ""}"); '
                f'the new pod, empty, replicates it; k3 kept: {self.cli(new, 6379, "get", "k3") == "v" and self.cli(old, 6379, "get", "k3") == "v"}')
        self.replicated('k4')
        old = self.primary()
        pod = old.split('.')[0]
        t = time.time()
        self.kill(pod, forget=True)
        self.start(pod)
        new = self.wait(lambda: (lambda p: p if p and p != old else None)(self.primary()), '--force: a replica promoted while the empty pod waits')
        promoted = time.time() - t
        self.rejoined(pod, old, new, '--force')
        kept = [self.cli(host(NODE, i), 6379, 'get', 'k4') for i in range(3)]
        if kept != ['v'] * 3:
            sys.exit(f'FAIL --force: k4 on the nodes: {kept} (an empty pod came back as the primary and emptied its replicas)')
        self.ok(f'--force: {pod} deleted without preStop and started again at once, empty: it waited, {new.split(".")[0]} promoted after {promoted:.1f} s, k4 kept on every node')

    def services(self):
        env = dict(self.env, WSPS_REDIS_PASSWORD=PASSWORD, WSPS_REDIS_SENTINEL_PASSWORD=PASSWORD)
        check = f'''
import {{ execFileSync }} from 'node:child_process'
import WebSocket from 'ws'
import {{ startFetcher, startGateway, waitFor }} from './harness/testkit/src/index.js'
import {{ WspsClient }} from '@wsps/client'
const env = {env!r}
const fetcher = await startFetcher(env.WSPS_REDIS_URL, {{ ...env, WSPS_FETCH_INTERVAL_MS: 100 }})
const gateway = await startGateway(env.WSPS_REDIS_URL, env)
const client = new WspsClient({{ url: [gateway.wsUrl], WebSocket, symbols: [] }})
let last = 0
client.on('quote', () => {{ last = performance.now() }})
client.connect()
client.subscribe(['SIM1', 'SIM2'], {{ mode: 'distinct' }})
await waitFor(() => last > 0, {{ timeout: 30000, message: 'a first quote' }})
console.log('READY')
await new Promise((resolve) => process.stdin.once('data', resolve))
const promoted = performance.now()
await waitFor(() => last > promoted, {{ timeout: 20000, message: 'quotes after the promotion' }})
console.log(`RESUMED ${{Math.round(last - promoted)}}`)
client.close()
await Promise.all([gateway.kill(), fetcher.kill()])
process.exit(0)
'''
        p = subprocess.Popen(['node', '--input-type=module', '-e', check], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline().strip()
        if line != 'READY':
            sys.exit(f'FAIL services: {line or "no quote"}')
        self.ok(f'services: fetcher and gateway on the chart\'s settings ({", ".join(sorted(self.env))}) deliver quotes')
        pod, _, new, promoted = self.failover(3)
        p.stdin.write('promoted\n')
        p.stdin.flush()
        line = p.stdout.readline().strip()
        if not line.startswith('RESUMED') or p.wait(30) != 0:
            sys.exit(f'FAIL services after failover 3: {line}')
        self.ok(f'services: {pod} SIGKILLed, {new.split(".")[0]} promoted after {promoted:.1f} s, quotes again {line.split()[1]} ms after it')

    def close(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()


def main():
    if os.environ.get('SENTINEL_SIM_IN_NS') != '1':
        os.execvp('unshare', ['unshare', '-mn', '--fork', 'env', 'SENTINEL_SIM_IN_NS=1', sys.executable, *sys.argv])
    tmp = tempfile.mkdtemp(prefix='wsps-sentinel-sim-')
    sim = Sim(tmp)
    print('sentinel-sim: the chart\'s redis.mode=sentinel scripts, 3 nodes + 3 Sentinels on loopback', flush=True)
    try:
        sim.run()
    finally:
        sim.close()
    if '--keep' in sys.argv:
        print(f'sentinel-sim: pod directories and logs kept in {tmp}')
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    print('sentinel-sim: all passed')


if __name__ == '__main__':
    main()
