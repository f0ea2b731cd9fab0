"""The local ROCm build images: their labels tell the truth, listing and bad input read well."""

from __future__ import annotations

import json
import subprocess

import docker
import pytest
from typer.testing import CliRunner

from agent.cli import app
from sandboxes.images import ImageBuildError, ImageRecipe, build_image
from sandboxes.images.listing import catalog, local_build_images
from sandboxes.images.recipes import CANDIDATE_ARCHS

KERNEL = "#include <hip/hip_runtime.h>\\n__global__ void k(float* x) { x[0] = 2.0f; }\\n"


def _targets_that_compile(image: str) -> set[str]:
    """Compile a tiny kernel for each candidate target in one networkless container."""
    script = (
        f"printf '{KERNEL}' > /tmp/k.hip; for a in {' '.join(CANDIDATE_ARCHS)}; do "
        "hipcc --offload-arch=$a -c /tmp/k.hip -o /tmp/k_$a.o >/dev/null 2>&1 && echo $a; done"
    )
    proc = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", image, "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return set(proc.stdout.split())


def test_default_image_records_clang_21_and_the_mi300_mi355_targets(rocm_image):
    facts = {img["tag"]: img for img in local_build_images()}[rocm_image]
    assert facts["clang_version"].startswith("Debian clang version 21.")
    assert {"gfx90a", "gfx942", "gfx950"} <= set(facts["archs"])
    assert facts["hip_version"].startswith("6.4.")


def test_every_recorded_target_compiles_and_the_others_do_not(rocm_image):
    for image in local_build_images():
        assert _targets_that_compile(image["tag"]) == set(image["archs"]), image["tag"]


def test_image_sets_the_hip_platform_and_carries_python_with_numpy(rocm_image):
    out = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            rocm_image,
            "sh",
            "-c",
            'echo "$HIP_PLATFORM $(command -v hipcc)"; python3 -c "import numpy; print(numpy.__name__)"',
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.stdout.split() == ["amd", "/usr/bin/hipcc", "numpy"], out.stderr


def test_image_list_shows_the_local_build_and_the_official_images(rocm_image):
    result = CliRunner().invoke(app, ["image", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["image"]: row for row in json.loads(result.stdout)}
    assert rows[rocm_image]["present"] and rows[rocm_image]["kind"] == "local build"
    assert "gfx950" in rows[rocm_image]["targets"]
    kinds = {row["kind"] for row in rows.values()}
    assert {"base", "sglang", "vllm"} <= kinds
    pulled = {tag for image in docker.from_env().images.list() for tag in image.tags}
    for entry in catalog():
        assert rows[entry["image"]]["present"] == (entry["image"] in pulled)


def test_catalog_entries_name_rocm_and_known_targets():
    for entry in catalog():
        assert ":" in entry["image"] and entry["rocm"] and entry["targets"], entry
        assert set(entry["targets"]) <= set(CANDIDATE_ARCHS), entry


def test_unknown_recipe_is_a_one_line_error():
    result = CliRunner().invoke(app, ["image", "build", "4.0"])
    assert result.exit_code == 2
    assert result.output.strip() == "rocport: error: unknown image recipe '4.0'; known: 5.7, 6.4"


def test_an_unreachable_mirror_fails_the_build_naming_it(docker_daemon, tmp_path, monkeypatch):
    monkeypatch.setenv("ROCPORT_DEBIAN_MIRROR", "http://127.0.0.1:9/debian")  # nothing listens on port 9
    recipe = ImageRecipe(name="broken", suite="sid", rocm_packages=("hipcc",), description="test")
    with pytest.raises(ImageBuildError) as err:
        build_image(recipe, tag="rocport/rocm-build:broken-test", workdir=tmp_path)
    message = str(err.value)
    assert "127.0.0.1:9" in message and "ROCPORT_DEBIAN_MIRROR" in message and "\n" not in message
    assert (
        subprocess.run(
            ["docker", "image", "inspect", "rocport/rocm-build:broken-test"], capture_output=True, check=False
        ).returncode
        != 0
    )


def test_image_check_compiles_the_sample_for_every_recorded_target(rocm_image):
    result = CliRunner().invoke(app, ["image", "check", rocm_image])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"in-container ROCm compile OK: {rocm_image} built libvector_add.so")
    assert "gfx942" in result.stdout and "gfx950" in result.stdout


def test_image_check_for_a_target_the_compiler_lacks_shows_clangs_error(rocm_image):
    result = CliRunner().invoke(app, ["image", "check", rocm_image, "--arch", "gfx1234"])
    assert result.exit_code == 1
    assert "invalid target ID 'gfx1234'" in result.output
    assert f"rocport: error: in-container compile in {rocm_image} failed" in result.output
