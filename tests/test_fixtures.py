"""The test fixtures themselves: a copied demo workspace is independent of its template."""

import subprocess


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def test_a_copied_demo_checkout_points_at_its_own_tree(demo_template, demo_config):
    copy = demo_config.parent
    checkout = copy / "runs/demo/checkout"
    assert git(checkout, "rev-parse", "--git-common-dir").startswith(str(copy / "runs/trees/demo-notes"))
    template_head = git(demo_template / "runs/demo/checkout", "rev-parse", "HEAD")
    (checkout / "CARD.md").write_text("changed in the copy\n")
    git(checkout, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "copy only")
    assert git(demo_template / "runs/demo/checkout", "rev-parse", "HEAD") == template_head
    assert git(demo_template / "runs/demo/checkout", "status", "--porcelain") == ""
