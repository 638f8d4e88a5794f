// SPDX-License-Identifier: Apache-2.0
package io.fencelock.client;

/** The user may not run the command or name that key, lock or session ({@code -NOPERM}). */
public class PermissionException extends FencelockException {
  private static final long serialVersionUID = 1L;

  public PermissionException(String message) {
    super(message);
  }

  public PermissionException(String message, Throwable cause) {
    super(message, cause);
  }

  @Override
  public String word() {
    return "PERM";
  }
}
