"""The stepper in a notebook: Next and Run to end buttons, what the last steps did, and the picture
(whose caption says what fires next).

The picture is a PNG in an ``ipywidgets.Image``, redrawn after each click: it needs no interactive
matplotlib backend, and a notebook run headless keeps it like any other widget value.
"""
import html
import io

import ipywidgets
import matplotlib.pyplot as plt


def stepper_widget(stepper, title=None):
    """Buttons over ``stepper`` (a ``Stepper``) and its picture. An error of the backward (seed 001's
    second ``backward()``) is shown under the buttons, with the node that raised it marked."""
    next_button = ipywidgets.Button(description="Next node", icon="step-forward")
    run_button = ipywidgets.Button(description="Run to end", icon="fast-forward")
    status = ipywidgets.HTML()
    # at its own size, as the lesson's other pictures (a VBox would stretch it to the output's width)
    picture = ipywidgets.Image(format="png", layout=ipywidgets.Layout(align_self="flex-start"))

    def show(lines):
        ax = stepper.draw(title=title)
        buffer = io.BytesIO()
        ax.figure.savefig(buffer, format="png", dpi=100)  # the inline pictures' dpi
        plt.close(ax.figure)
        picture.value = buffer.getvalue()
        next_button.disabled = run_button.disabled = stepper.done
        status.value = "<br>".join(lines)

    def advance(run):
        count = len(stepper.steps)
        try:
            stepper.run() if run else stepper.step()
        except Exception as error:  # noqa: BLE001 - the learner sees the backward's error here
            show([*map(_said, stepper.steps[count:][-3:]),
                  f"<span style='color:#c0392b'><b>{type(error).__name__}</b>: {html.escape(str(error))}</span>"])
            return
        show([_said(step) for step in stepper.steps[count:][-3:]])

    next_button.on_click(lambda _: advance(run=False))
    run_button.on_click(lambda _: advance(run=True))
    show([])
    return ipywidgets.VBox([ipywidgets.HBox([next_button, run_button]), status, picture])


def _said(step):
    """One line about a step: the node, the shapes of what it sent, what it freed."""
    sent = ", ".join("None" if grad is None else str(list(grad.shape)) for _, _, grad in step.sent) or "nothing"
    freed = f"; freed {', '.join(step.freed)}" if step.freed else ""
    return f"{step.number}. <b>{html.escape(step.name)}</b> ran: sent {sent}{freed}"
