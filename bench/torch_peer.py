"""The PyTorch peer of `decide bench --size gpu`: the same workloads on the same GPU through Hugging
Face transformers + PyTorch eager (SDPA), a Qwen3 of the 0.6B shape with random fp16 weights.

Three ways to score every (state, question) pair's labels at the question's last token:
  fresh   every pair as one full sequence;
  reuse   Hugging Face-style prefix reuse: a prefix pass per state, its cache repeated per question,
          a suffix pass;
  packed  multi-item packing, the engine's GPU layout: one row per state (the state, then every
          question), a 4-D mask so each question sees the state and itself, positions of each
          question restarting at the state's length.
Prints one JSON line per workload (decisions/s, tokens/s, and the max |logit diff| of reuse and
packed against fresh), which `decide gpu-report` puts beside the engine's figures.
usage: python3 torch_peer.py [--workloads tickets,document,single] [--budget 16384]
"""
import argparse
import json
import time

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

# [states, state tokens, questions per state, question tokens]: bench/gpu-scale.ts's sizes.
WORKLOADS = {'tickets': (64, 390, 8, 18), 'document': (16, 1600, 13, 22), 'single': (128, 300, 1, 20)}
LABELS = 4


def build_model():
    torch.manual_seed(0)
    cfg = Qwen3Config(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                      num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                      max_position_embeddings=40960, tie_word_embeddings=True)
    cfg._attn_implementation = 'sdpa'
    return Qwen3ForCausalLM(cfg).to('cuda', torch.float16).eval()


def label_logits(model, hidden, labels):
    """Logits of each row's labels from its hidden state: [rows, d] x [rows, labels, d]."""
    return torch.einsum('bd,bkd->bk', hidden.float(), model.lm_head.weight[labels].float())


@torch.inference_mode()
def fresh(model, budget, ids, labels):
    rows, length = ids.shape
    per = max(1, budget // length)
    out = []
    for i in range(0, rows, per):
        hidden = model.model(input_ids=ids[i:i + per]).last_hidden_state[:, -1]
        out.append(label_logits(model, hidden, labels[i:i + per]))
    return torch.cat(out)


@torch.inference_mode()
def reuse(model, budget, pre, suf, labels, questions):
    states, prefix = pre.shape
    length = suf.shape[1]
    per = max(1, budget // (prefix + questions * length))
    out = []
    for i in range(0, states, per):
        cache = model.model(input_ids=pre[i:i + per], use_cache=True).past_key_values
        cache.batch_repeat_interleave(questions)
        s = suf[i * questions:(i + per) * questions]
        pos = torch.arange(prefix, prefix + length, device='cuda').unsqueeze(0).expand(s.shape[0], length)
        hidden = model.model(input_ids=s, past_key_values=cache, position_ids=pos, use_cache=True).last_hidden_state[:, -1]
        out.append(label_logits(model, hidden, labels[i * questions:(i + per) * questions]))
    return torch.cat(out)


@torch.inference_mode()
def packed(model, budget, pre, suf, labels, questions):
    states, prefix = pre.shape
    length = suf.shape[1]
    total = prefix + questions * length
    per = max(1, budget // total)
    allowed = torch.zeros(total, total, dtype=torch.bool, device='cuda')
    allowed[:, :prefix] = True
    allowed[:prefix, :prefix] = torch.ones(prefix, prefix, dtype=torch.bool, device='cuda').tril()
    for q in range(questions):
        a = prefix + q * length
        allowed[a:a + length, a:a + length] = torch.ones(length, length, dtype=torch.bool, device='cuda').tril()
    mask = torch.zeros(total, total, dtype=torch.float16, device='cuda').masked_fill(~allowed, torch.finfo(torch.float16).min)
    pos = torch.cat([torch.arange(prefix, device='cuda')] + [torch.arange(prefix, prefix + length, device='cuda')] * questions)
    ends = torch.tensor([prefix + q * length + length - 1 for q in range(questions)], device='cuda')
    out = []
    for i in range(0, states, per):
        n = min(per, states - i)
        ids = torch.cat([pre[i:i + n], suf[i * questions:(i + n) * questions].reshape(n, questions * length)], 1)
        hidden = model.model(input_ids=ids, attention_mask=mask.expand(n, 1, total, total),
                             position_ids=pos.expand(n, total)).last_hidden_state
        hidden = hidden[:, ends].reshape(n * questions, -1)
        out.append(label_logits(model, hidden, labels[i * questions:(i + n) * questions]))
    return torch.cat(out)


def best(f, repetitions=3):
    f()
    torch.cuda.synchronize()
    fastest, result = float('inf'), None
    for _ in range(repetitions):
        start = time.perf_counter()
        result = f()
        torch.cuda.synchronize()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest, result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--workloads', default=','.join(WORKLOADS))
    parser.add_argument('--budget', type=int, default=16384, help='tokens per forward pass')
    args = parser.parse_args()
    model = build_model()
    for name in args.workloads.split(','):
        states, prefix, questions, length = WORKLOADS[name]
        g = torch.Generator(device='cuda').manual_seed(1)
        pre = torch.randint(1000, 100000, (states, prefix), device='cuda', generator=g)
        suf = torch.randint(1000, 100000, (states * questions, length), device='cuda', generator=g)
        labels = torch.randint(1000, 100000, (states * questions, LABELS), device='cuda', generator=g)
        full = torch.cat([pre.repeat_interleave(questions, 0), suf], 1)
        decisions = states * questions
        line = {'peer': 'torch', 'workload': name, 'decisions': decisions, 'torch': torch.__version__}
        t, reference = best(lambda: fresh(model, args.budget, full, labels))
        line['fresh'] = {'seconds': t, 'decisionsPerSecond': decisions / t, 'tokensPerSecond': decisions * (prefix + length) / t}
        for key, f in (('reuse', reuse), ('packed', packed)):
            try:
                t, r = best(lambda: f(model, args.budget, pre, suf, labels, questions))
                line[key] = {'seconds': t, 'decisionsPerSecond': decisions / t, 'maxLogitDiff': (reference - r).abs().max().item()}
            except Exception as e:  # a peer layout that fails is reported, not fatal
                line[key] = {'error': f'{type(e).__name__}: {str(e)[:200]}'}
        print(json.dumps(line), flush=True)


if __name__ == '__main__':
    main()
