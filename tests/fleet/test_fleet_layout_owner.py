"""A layout found by name is the person's before the project's: an agent working in the project can write
``./tmuxinator/NAME.yml``, whose ``on_project_start`` would run at the person's next ``fleet start NAME``."""

from __future__ import annotations

from support.fleet import FleetWorld


def test_a_name_in_both_the_persons_folder_and_the_projects_is_refused(world: FleetWorld) -> None:
    planted = world.base / "planted"
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n",
                 extra=f"on_project_start: touch {planted}\n")  # fmt: skip
    own = world.home / ".config" / "tmuxinator" / "duo.yml"
    own.parent.mkdir(parents=True)
    own.write_text("name: duo\nwindows:\n  - agents:\n      panes:\n        - A: claude-run\n")

    done = world.fleet("start", "duo", "--no-attach")

    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == (
        "fleet: error: layout 'duo' is both ~/.config/tmuxinator/duo.yml and ./tmuxinator/duo.yml; "
        "name the file you mean (fleet start ~/.config/tmuxinator/duo.yml)\n"
    )
    assert not planted.exists(), "the project's layout ran nothing"
    assert not world.server_alive()
